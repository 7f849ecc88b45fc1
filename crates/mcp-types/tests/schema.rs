//! Values built with the Rust API validate against the official JSON Schema of their revision.
//!
//! Every `$defs` entry that is a message (a request, notification, result, response or error)
//! must be covered by at least one value, in both schemas; the test fails on a message type it
//! does not cover, and reports how many of all definitions it covered.

mod common;

use std::collections::{BTreeMap, BTreeSet};

use mcp_types::capabilities::{ListChangedCapability, ResourcesCapability};
use mcp_types::common::{CacheScope, EmptyResult, PaginatedRequestParams, RequestParams};
use mcp_types::completion::{
    CompleteRequestParams, CompleteResult, Completion, CompletionArgument, CompletionContext,
    CompletionReference,
};
use mcp_types::content::{
    Annotations, BinaryContent, EmbeddedResource, Icon, OneOrMany, ResourceContents, ResourceLink,
    SamplingContent, TextContent, ToolResultContent, ToolUseContent,
};
use mcp_types::discover::DiscoverResult;
use mcp_types::elicitation::{
    ElicitRequestFormParams, ElicitRequestParams, ElicitRequestUrlParams, ElicitResult,
    ElicitValue, ElicitationCompleteParams, ElicitationSchema, EnumOption, MultiSelectItems,
    PrimitiveSchemaDefinition,
};
use mcp_types::error::UrlElicitationRequiredData;
use mcp_types::jsonrpc::JsonRpcError;
use mcp_types::lifecycle::{Implementation, InitializeRequestParams, InitializeResult};
use mcp_types::logging::{LoggingLevel, LoggingMessageParams, SetLevelRequestParams};
use mcp_types::meta::Meta;
use mcp_types::mrtr::{InputRequest, InputRequests, InputResponse};
use mcp_types::notifications::{CancelledParams, ProgressParams};
use mcp_types::prompts::{
    GetPromptRequestParams, GetPromptResult, ListPromptsResult, Prompt, PromptArgument,
    PromptMessage,
};
use mcp_types::resources::{
    ListResourceTemplatesResult, ListResourcesResult, ReadResourceRequestParams,
    ReadResourceResult, Resource, ResourceTemplate, ResourceUriParams,
};
use mcp_types::roots::{ListRootsResult, Root};
use mcp_types::sampling::{
    CreateMessageRequestParams, CreateMessageResult, ModelHint, ModelPreferences, SamplingMessage,
    ToolChoice,
};
use mcp_types::subscriptions::{
    SubscriptionFilter, SubscriptionsAcknowledgedParams, SubscriptionsListenRequestParams,
};
use mcp_types::tasks::{
    CreateTaskResult, ListTasksResult, Task, TaskIdParams, TaskMetadata, TaskStatus,
};
use mcp_types::tools::{
    CallToolRequestParams, CallToolResult, ListToolsResult, Tool, ToolAnnotations, ToolExecution,
};
use mcp_types::{
    ClientCapabilities, ClientNotification, ClientRequest, ContentBlock, ErrorCode, ErrorObject,
    InputRequiredResult, JsonObject, JsonRpcMessage, JsonRpcResponse, ResultType, Role,
    ServerCapabilities, ServerNotification, ServerRequest,
};
use serde::Serialize;
use serde_json::{Value, json};

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
enum Rev {
    Modern,
    Legacy,
}

struct Case {
    rev: Rev,
    def: &'static str,
    value: Value,
}

#[derive(Default)]
struct Cases(Vec<Case>);

impl Cases {
    fn add(&mut self, rev: Rev, def: &'static str, value: impl Serialize) {
        self.0.push(Case {
            rev,
            def,
            value: serde_json::to_value(value).unwrap(),
        });
    }
    fn both(&mut self, def: &'static str, modern: impl Serialize, legacy: impl Serialize) {
        self.add(Rev::Modern, def, modern);
        self.add(Rev::Legacy, def, legacy);
    }
}

fn obj(value: Value) -> JsonObject {
    match value {
        Value::Object(o) => o,
        other => panic!("not an object: {other}"),
    }
}

fn modern_meta() -> Option<Meta> {
    let mut meta = Meta::request("2026-07-28", ClientCapabilities::form_elicitation());
    meta.client_info = Some(std::sync::Arc::new(Implementation::new(
        "rs-client",
        "0.1.0",
    )));
    meta.log_level = Some(LoggingLevel::Info);
    meta.progress_token = Some(7.into());
    Some(meta)
}

fn server_meta() -> Option<Meta> {
    Some(Meta::result(Implementation::new("rs-server", "0.1.0")))
}

fn request(req: ClientRequest) -> Value {
    JsonRpcMessage::Request(req.to_request(1).unwrap()).to_value()
}

fn server_request(req: ServerRequest) -> Value {
    JsonRpcMessage::Request(req.to_request("s-1").unwrap()).to_value()
}

fn notification(n: ServerNotification) -> Value {
    JsonRpcMessage::Notification(n.to_notification().unwrap()).to_value()
}

fn client_notification(n: ClientNotification) -> Value {
    JsonRpcMessage::Notification(n.to_notification().unwrap()).to_value()
}

fn response(result: &impl Serialize) -> Value {
    JsonRpcMessage::Response(JsonRpcResponse::new(1.into(), result).unwrap()).to_value()
}

fn error_response(error: ErrorObject) -> Value {
    JsonRpcMessage::Error(JsonRpcError::new(Some(1.into()), error)).to_value()
}

fn tool() -> Tool {
    Tool {
        name: "book_table".into(),
        title: Some("Book a table".into()),
        description: Some("Book a table at the bistro.".into()),
        input_schema: obj(
            json!({"type":"object","properties":{"date":{"type":"string"}},"required":["date"]}),
        ),
        output_schema: Some(obj(
            json!({"type":"object","properties":{"result":{"type":"string"}}}),
        )),
        annotations: Some(ToolAnnotations {
            title: Some("Book".into()),
            read_only_hint: Some(false),
            destructive_hint: Some(false),
            idempotent_hint: Some(true),
            open_world_hint: Some(true),
            extra: JsonObject::new(),
        }),
        icons: Some(vec![icon()]),
        execution: None,
        meta: None,
        extra: JsonObject::new(),
    }
}

fn icon() -> Icon {
    Icon {
        src: "https://example.com/i.png".into(),
        mime_type: Some("image/png".into()),
        sizes: Some(vec!["48x48".into()]),
        theme: Some("dark".into()),
        extra: JsonObject::new(),
    }
}

fn annotations() -> Annotations {
    Annotations {
        audience: Some(vec![Role::User, Role::Assistant]),
        priority: Some(serde_json::Number::from_f64(0.5).unwrap()),
        last_modified: Some("2026-08-01T10:00:00Z".into()),
        extra: JsonObject::new(),
    }
}

fn every_content_block() -> Vec<ContentBlock> {
    let mut text = TextContent::new("hello");
    text.annotations = Some(annotations());
    vec![
        ContentBlock::Text(text),
        ContentBlock::Image(BinaryContent::new("aGk=", "image/png")),
        ContentBlock::Audio(BinaryContent::new("aGk=", "audio/wav")),
        ContentBlock::ResourceLink(ResourceLink {
            uri: "file:///a.txt".into(),
            name: "a".into(),
            title: Some("A".into()),
            description: Some("a file".into()),
            mime_type: Some("text/plain".into()),
            size: Some(3),
            icons: Some(vec![icon()]),
            annotations: Some(annotations()),
            meta: None,
            extra: JsonObject::new(),
        }),
        ContentBlock::Resource(EmbeddedResource {
            resource: ResourceContents::text("file:///a.txt", "abc").with_mime_type("text/plain"),
            annotations: None,
            meta: None,
            extra: JsonObject::new(),
        }),
        ContentBlock::Resource(EmbeddedResource {
            resource: ResourceContents::blob("file:///a.bin", "AAE="),
            annotations: None,
            meta: None,
            extra: JsonObject::new(),
        }),
    ]
}

fn form_schema() -> ElicitationSchema {
    let option = |c: &str| EnumOption {
        const_: c.into(),
        title: c.to_uppercase(),
        extra: JsonObject::new(),
    };
    let mut properties = BTreeMap::new();
    let mut string = PrimitiveSchemaDefinition::of_type("string").with_description("a date");
    string.format = Some("date".into());
    string.min_length = Some(1);
    string.max_length = Some(10);
    string.default = Some(json!("2025-12-26"));
    properties.insert("date".into(), string);
    let mut number = PrimitiveSchemaDefinition::of_type("number");
    number.minimum = Some(1.into());
    number.maximum = Some(serde_json::Number::from_f64(9.5).unwrap());
    properties.insert("n".into(), number);
    properties.insert(
        "ok".into(),
        PrimitiveSchemaDefinition::of_type("boolean").with_default(json!(true)),
    );
    properties.insert(
        "pick".into(),
        PrimitiveSchemaDefinition {
            enum_: Some(vec!["a".into(), "b".into()]),
            ..PrimitiveSchemaDefinition::of_type("string")
        },
    );
    properties.insert(
        "titled".into(),
        PrimitiveSchemaDefinition {
            one_of: Some(vec![option("a"), option("b")]),
            ..PrimitiveSchemaDefinition::of_type("string")
        },
    );
    properties.insert(
        "legacy".into(),
        PrimitiveSchemaDefinition {
            enum_: Some(vec!["a".into()]),
            enum_names: Some(vec!["A".into()]),
            ..PrimitiveSchemaDefinition::of_type("string")
        },
    );
    properties.insert(
        "many".into(),
        PrimitiveSchemaDefinition {
            items: Some(MultiSelectItems {
                type_: Some("string".into()),
                enum_: Some(vec!["x".into(), "y".into()]),
                ..Default::default()
            }),
            min_items: Some(1),
            max_items: Some(2),
            default: Some(json!(["x"])),
            ..PrimitiveSchemaDefinition::of_type("array")
        },
    );
    properties.insert(
        "many_titled".into(),
        PrimitiveSchemaDefinition {
            items: Some(MultiSelectItems {
                any_of: Some(vec![option("x")]),
                ..Default::default()
            }),
            ..PrimitiveSchemaDefinition::of_type("array")
        },
    );
    ElicitationSchema::new(properties, vec!["date".into()])
}

fn form_params(legacy: bool) -> ElicitRequestFormParams {
    ElicitRequestFormParams {
        mode: Some("form".into()),
        message: "No tables for 2 on 2025-12-25. Would you like to try another date?".into(),
        requested_schema: form_schema(),
        task: legacy.then(|| TaskMetadata {
            ttl: Some(1000),
            extra: JsonObject::new(),
        }),
        meta: None,
        extra: JsonObject::new(),
    }
}

fn url_params(legacy: bool) -> ElicitRequestUrlParams {
    ElicitRequestUrlParams {
        mode: "url".into(),
        message: "A 20 EUR deposit confirms your booking.".into(),
        url: "https://pay.example.com/deposit/b1".into(),
        elicitation_id: legacy.then(|| "deposit-b1".into()),
        task: None,
        meta: None,
        extra: JsonObject::new(),
    }
}

fn sampling_params(legacy: bool) -> CreateMessageRequestParams {
    let mut params = CreateMessageRequestParams::new(
        vec![
            SamplingMessage {
                role: Role::User,
                content: OneOrMany::One(SamplingContent::Text(TextContent::new("Plan a trip"))),
                meta: None,
                extra: JsonObject::new(),
            },
            SamplingMessage {
                role: Role::Assistant,
                content: OneOrMany::Many(vec![SamplingContent::ToolUse(ToolUseContent {
                    id: "u1".into(),
                    name: "weather".into(),
                    input: obj(json!({"city": "Lisbon"})),
                    meta: None,
                    extra: JsonObject::new(),
                })]),
                meta: None,
                extra: JsonObject::new(),
            },
            SamplingMessage {
                role: Role::User,
                content: OneOrMany::Many(vec![SamplingContent::ToolResult(ToolResultContent {
                    tool_use_id: "u1".into(),
                    content: vec![ContentBlock::text("sunny")],
                    structured_content: Some(json!({"sky": "clear"})),
                    is_error: Some(false),
                    meta: None,
                    extra: JsonObject::new(),
                })]),
                meta: None,
                extra: JsonObject::new(),
            },
        ],
        200,
    );
    params.model_preferences = Some(ModelPreferences {
        hints: Some(vec![ModelHint {
            name: Some("claude".into()),
            extra: JsonObject::new(),
        }]),
        cost_priority: Some(serde_json::Number::from_f64(0.2).unwrap()),
        speed_priority: Some(serde_json::Number::from_f64(0.5).unwrap()),
        intelligence_priority: Some(1.into()),
        extra: JsonObject::new(),
    });
    params.system_prompt = Some("You are a travel agent.".into());
    params.include_context = Some("none".into());
    params.temperature = Some(serde_json::Number::from_f64(0.7).unwrap());
    params.stop_sequences = Some(vec!["END".into()]);
    params.metadata = Some(obj(json!({"k": "v"})));
    let mut sampling_tool = tool();
    sampling_tool.output_schema = None;
    params.tools = Some(vec![sampling_tool]);
    params.tool_choice = Some(ToolChoice {
        mode: Some("auto".into()),
        extra: JsonObject::new(),
    });
    if legacy {
        params.task = Some(TaskMetadata::default());
    }
    params
}

fn create_message_result() -> CreateMessageResult {
    CreateMessageResult {
        role: Role::Assistant,
        content: OneOrMany::One(SamplingContent::Text(TextContent::new("Lisbon in May"))),
        model: "claude".into(),
        stop_reason: Some("endTurn".into()),
        meta: None,
        extra: JsonObject::new(),
    }
}

fn elicit_accept() -> ElicitResult {
    let mut content = BTreeMap::new();
    content.insert("accept_alternative".into(), ElicitValue::Bool(true));
    content.insert("date".into(), ElicitValue::String("2025-12-27".into()));
    content.insert("party".into(), ElicitValue::Number(2.into()));
    content.insert("many".into(), ElicitValue::Strings(vec!["x".into()]));
    ElicitResult::accept(content)
}

fn roots_result() -> ListRootsResult {
    ListRootsResult {
        roots: vec![Root::new("file:///projects/app", Some("app".into()))],
        meta: None,
        extra: JsonObject::new(),
    }
}

fn input_requests() -> InputRequests {
    let mut requests = InputRequests::new();
    requests.insert(
        "confirm".into(),
        InputRequest::Elicit(ElicitRequestParams::Form(form_params(false))),
    );
    requests.insert(
        "pay".into(),
        InputRequest::Elicit(ElicitRequestParams::Url(url_params(false))),
    );
    requests.insert(
        "plan".into(),
        InputRequest::CreateMessage(sampling_params(false)),
    );
    requests.insert("roots".into(), InputRequest::ListRoots(None));
    requests
}

fn input_responses() -> mcp_types::mrtr::InputResponses {
    let mut responses = mcp_types::mrtr::InputResponses::new();
    responses.insert("confirm".into(), InputResponse::Elicit(elicit_accept()));
    responses.insert(
        "pay".into(),
        InputResponse::Elicit(ElicitResult::accept_url()),
    );
    responses.insert(
        "plan".into(),
        InputResponse::CreateMessage(create_message_result()),
    );
    responses.insert("roots".into(), InputResponse::ListRoots(roots_result()));
    responses
}

fn task() -> Task {
    Task {
        task_id: "786512e2".into(),
        status: TaskStatus::Working,
        status_message: Some("started".into()),
        created_at: "2026-08-01T10:00:00Z".into(),
        last_updated_at: "2026-08-01T10:00:00Z".into(),
        ttl: Some(60000),
        poll_interval: Some(5000),
        result_type: None,
        meta: None,
        extra: JsonObject::new(),
    }
}

fn paginated(modern: bool) -> Option<PaginatedRequestParams> {
    Some(PaginatedRequestParams {
        cursor: Some("page-2".into()),
        meta: if modern { modern_meta() } else { None },
        extra: JsonObject::new(),
    })
}

fn server_caps(modern: bool) -> ServerCapabilities {
    let mut experimental = BTreeMap::new();
    experimental.insert("x-vendor".into(), JsonObject::new());
    ServerCapabilities {
        experimental: Some(experimental),
        logging: Some(JsonObject::new()),
        completions: Some(JsonObject::new()),
        prompts: Some(ListChangedCapability {
            list_changed: Some(true),
            extra: JsonObject::new(),
        }),
        resources: Some(ResourcesCapability {
            subscribe: Some(true),
            list_changed: Some(true),
            extra: JsonObject::new(),
        }),
        tools: Some(ListChangedCapability {
            list_changed: Some(false),
            extra: JsonObject::new(),
        }),
        tasks: None,
        extensions: modern.then(|| {
            let mut e = BTreeMap::new();
            e.insert("io.modelcontextprotocol/tasks".into(), JsonObject::new());
            e
        }),
        extra: JsonObject::new(),
    }
}

fn client_caps(modern: bool) -> ClientCapabilities {
    let mut caps: ClientCapabilities = serde_json::from_value(json!({
        "elicitation": {"form": {}, "url": {}},
        "sampling": {"tools": {}, "context": {}},
        "roots": if modern { json!({}) } else { json!({"listChanged": true}) },
        "experimental": {"x-vendor": {}}
    }))
    .unwrap();
    if modern {
        caps.extensions = Some(BTreeMap::from([(
            "io.modelcontextprotocol/ui".into(),
            JsonObject::new(),
        )]));
    }
    caps
}

fn complete_params(modern: bool, resource: bool) -> CompleteRequestParams {
    CompleteRequestParams {
        reference: if resource {
            CompletionReference::Resource {
                uri: "vault://{item}".into(),
                extra: JsonObject::new(),
            }
        } else {
            CompletionReference::Prompt {
                name: "briefing".into(),
                title: Some("Briefing".into()),
                extra: JsonObject::new(),
            }
        },
        argument: CompletionArgument {
            name: "audience".into(),
            value: "eng".into(),
            extra: JsonObject::new(),
        },
        context: Some(CompletionContext {
            arguments: Some(BTreeMap::from([("a".into(), "b".into())])),
            extra: JsonObject::new(),
        }),
        meta: if modern { modern_meta() } else { None },
        extra: JsonObject::new(),
    }
}

fn cases() -> Cases {
    let mut c = Cases::default();
    let (m, l) = (Rev::Modern, Rev::Legacy);

    // Requests, client to server.
    c.add(
        m,
        "DiscoverRequest",
        request(ClientRequest::Discover(Some(RequestParams {
            meta: modern_meta(),
            extra: JsonObject::new(),
        }))),
    );
    c.add(
        l,
        "InitializeRequest",
        request(ClientRequest::Initialize(InitializeRequestParams {
            protocol_version: "2025-11-25".into(),
            capabilities: client_caps(false),
            client_info: Implementation {
                title: Some("Client".into()),
                icons: Some(vec![icon()]),
                website_url: Some("https://example.com".into()),
                description: Some("d".into()),
                ..Implementation::new("c", "1")
            },
            meta: None,
            extra: JsonObject::new(),
        })),
    );
    c.add(l, "PingRequest", request(ClientRequest::Ping(None)));
    c.add(
        m,
        "ListToolsRequest",
        request(ClientRequest::ListTools(paginated(true))),
    );
    c.add(
        l,
        "ListToolsRequest",
        request(ClientRequest::ListTools(paginated(false))),
    );
    c.add(
        l,
        "ListToolsRequest",
        request(ClientRequest::ListTools(None)),
    );
    let call = |modern: bool| CallToolRequestParams {
        name: "book_table".into(),
        arguments: Some(obj(json!({"date": "2025-12-25", "party_size": 2}))),
        input_responses: modern.then(input_responses),
        request_state: modern.then(|| json!("v1.abc")),
        task: (!modern).then(TaskMetadata::default),
        meta: if modern { modern_meta() } else { None },
        extra: JsonObject::new(),
    };
    c.add(
        m,
        "CallToolRequest",
        request(ClientRequest::CallTool(call(true))),
    );
    c.add(
        l,
        "CallToolRequest",
        request(ClientRequest::CallTool(call(false))),
    );
    for (rev, modern) in [(m, true), (l, false)] {
        c.add(
            rev,
            "ListPromptsRequest",
            request(ClientRequest::ListPrompts(paginated(modern))),
        );
        c.add(
            rev,
            "ListResourcesRequest",
            request(ClientRequest::ListResources(paginated(modern))),
        );
        c.add(
            rev,
            "ListResourceTemplatesRequest",
            request(ClientRequest::ListResourceTemplates(paginated(modern))),
        );
        c.add(
            rev,
            "GetPromptRequest",
            request(ClientRequest::GetPrompt(GetPromptRequestParams {
                name: "briefing".into(),
                arguments: Some(BTreeMap::from([("topic".into(), "q3".into())])),
                input_responses: modern.then(input_responses),
                request_state: modern.then(|| json!("s")),
                meta: if modern { modern_meta() } else { None },
                extra: JsonObject::new(),
            })),
        );
        c.add(
            rev,
            "ReadResourceRequest",
            request(ClientRequest::ReadResource(ReadResourceRequestParams {
                uri: "vault://item".into(),
                input_responses: modern.then(input_responses),
                request_state: modern.then(|| json!("s")),
                meta: if modern { modern_meta() } else { None },
                extra: JsonObject::new(),
            })),
        );
        c.add(
            rev,
            "CompleteRequest",
            request(ClientRequest::Complete(complete_params(modern, false))),
        );
        c.add(
            rev,
            "CompleteRequest",
            request(ClientRequest::Complete(complete_params(modern, true))),
        );
    }
    let uri = ResourceUriParams {
        uri: "file:///cfg.json".into(),
        meta: None,
        extra: JsonObject::new(),
    };
    c.add(
        l,
        "SubscribeRequest",
        request(ClientRequest::Subscribe(uri.clone())),
    );
    c.add(
        l,
        "UnsubscribeRequest",
        request(ClientRequest::Unsubscribe(uri.clone())),
    );
    c.add(
        l,
        "SetLevelRequest",
        request(ClientRequest::SetLevel(SetLevelRequestParams {
            level: LoggingLevel::Warning,
            meta: None,
            extra: JsonObject::new(),
        })),
    );
    c.add(
        m,
        "SubscriptionsListenRequest",
        request(ClientRequest::SubscriptionsListen(
            SubscriptionsListenRequestParams {
                notifications: SubscriptionFilter {
                    tools_list_changed: Some(true),
                    prompts_list_changed: Some(false),
                    resources_list_changed: Some(true),
                    resource_subscriptions: Some(vec!["file:///cfg.json".into()]),
                    extra: JsonObject::new(),
                },
                meta: modern_meta(),
                extra: JsonObject::new(),
            },
        )),
    );
    let task_id = TaskIdParams {
        task_id: "786512e2".into(),
        meta: None,
        extra: JsonObject::new(),
    };
    c.add(
        l,
        "GetTaskRequest",
        request(ClientRequest::GetTask(task_id.clone())),
    );
    c.add(
        l,
        "GetTaskPayloadRequest",
        request(ClientRequest::GetTaskPayload(task_id.clone())),
    );
    c.add(
        l,
        "CancelTaskRequest",
        request(ClientRequest::CancelTask(task_id.clone())),
    );
    c.add(
        l,
        "ListTasksRequest",
        request(ClientRequest::ListTasks(paginated(false))),
    );

    // Requests, server to client (legacy) and the same payloads as input requests (modern).
    c.add(
        l,
        "ElicitRequest",
        server_request(ServerRequest::Elicit(ElicitRequestParams::Form(
            form_params(true),
        ))),
    );
    c.add(
        l,
        "ElicitRequest",
        server_request(ServerRequest::Elicit(ElicitRequestParams::Url(url_params(
            true,
        )))),
    );
    c.add(
        l,
        "CreateMessageRequest",
        server_request(ServerRequest::CreateMessage(sampling_params(true))),
    );
    c.add(
        l,
        "ListRootsRequest",
        server_request(ServerRequest::ListRoots(None)),
    );
    c.add(l, "PingRequest", server_request(ServerRequest::Ping(None)));
    c.add(
        l,
        "GetTaskRequest",
        server_request(ServerRequest::GetTask(task_id.clone())),
    );
    c.add(
        l,
        "ListTasksRequest",
        server_request(ServerRequest::ListTasks(None)),
    );
    let requests = input_requests();
    c.add(m, "ElicitRequest", &requests["confirm"]);
    c.add(m, "ElicitRequest", &requests["pay"]);
    c.add(m, "CreateMessageRequest", &requests["plan"]);
    c.add(m, "ListRootsRequest", &requests["roots"]);
    c.add(m, "InputRequests", &requests);
    c.add(m, "InputResponses", input_responses());
    for (_, response) in input_responses() {
        c.add(m, "InputResponse", response);
    }

    // Notifications.
    for rev in [m, l] {
        let meta = (rev == m).then(|| Meta {
            subscription_id: Some("listen-1".into()),
            ..Meta::default()
        });
        c.add(
            rev,
            "CancelledNotification",
            notification(ServerNotification::Cancelled(CancelledParams {
                request_id: Some(42.into()),
                reason: Some("user".into()),
                meta: None,
                extra: JsonObject::new(),
            })),
        );
        c.add(
            rev,
            "ProgressNotification",
            notification(ServerNotification::Progress(ProgressParams {
                progress_token: "t".into(),
                progress: serde_json::Number::from_f64(50.5).unwrap(),
                total: Some(100.into()),
                message: Some("halfway".into()),
                meta: None,
                extra: JsonObject::new(),
            })),
        );
        c.add(
            rev,
            "LoggingMessageNotification",
            notification(ServerNotification::LoggingMessage(LoggingMessageParams {
                level: LoggingLevel::Error,
                logger: Some("db".into()),
                data: json!({"detail": "x"}),
                meta: None,
                extra: JsonObject::new(),
            })),
        );
        c.add(
            rev,
            "ResourceUpdatedNotification",
            notification(ServerNotification::ResourceUpdated(ResourceUriParams {
                meta: meta.clone(),
                ..uri.clone()
            })),
        );
        let params = Some(RequestParams {
            meta: meta.clone(),
            extra: JsonObject::new(),
        });
        c.add(
            rev,
            "ResourceListChangedNotification",
            notification(ServerNotification::ResourceListChanged(params.clone())),
        );
        c.add(
            rev,
            "ToolListChangedNotification",
            notification(ServerNotification::ToolListChanged(params.clone())),
        );
        c.add(
            rev,
            "PromptListChangedNotification",
            notification(ServerNotification::PromptListChanged(None)),
        );
    }
    c.add(
        m,
        "SubscriptionsAcknowledgedNotification",
        notification(ServerNotification::SubscriptionsAcknowledged(
            SubscriptionsAcknowledgedParams {
                notifications: SubscriptionFilter {
                    tools_list_changed: Some(true),
                    ..Default::default()
                },
                meta: Some(Meta {
                    subscription_id: Some("listen-1".into()),
                    ..Meta::default()
                }),
                extra: JsonObject::new(),
            },
        )),
    );
    c.add(
        m,
        "CancelledNotification",
        client_notification(ClientNotification::Cancelled(CancelledParams {
            request_id: Some("listen-1".into()),
            reason: None,
            meta: None,
            extra: JsonObject::new(),
        })),
    );
    c.add(
        l,
        "ElicitationCompleteNotification",
        notification(ServerNotification::ElicitationComplete(
            ElicitationCompleteParams {
                elicitation_id: "deposit-b1".into(),
                extra: JsonObject::new(),
            },
        )),
    );
    c.add(
        l,
        "TaskStatusNotification",
        notification(ServerNotification::TaskStatus(task())),
    );
    c.add(
        l,
        "InitializedNotification",
        client_notification(ClientNotification::Initialized(None)),
    );
    c.add(
        l,
        "RootsListChangedNotification",
        client_notification(ClientNotification::RootsListChanged(None)),
    );
    c.add(
        l,
        "ProgressNotification",
        client_notification(ClientNotification::Progress(ProgressParams {
            progress_token: 1.into(),
            progress: 1.into(),
            total: None,
            message: None,
            meta: None,
            extra: JsonObject::new(),
        })),
    );

    // Results.
    let complete = Some(ResultType::Complete);
    let discover = DiscoverResult {
        supported_versions: vec!["2026-07-28".into(), "2025-11-25".into()],
        capabilities: server_caps(true),
        instructions: Some("Ask before deleting.".into()),
        ttl_ms: Some(3_600_000),
        cache_scope: Some(CacheScope::Public),
        result_type: complete.clone(),
        meta: server_meta(),
        extra: JsonObject::new(),
    };
    c.add(m, "DiscoverResult", &discover);
    c.add(m, "DiscoverResultResponse", response(&discover));
    c.add(
        l,
        "InitializeResult",
        InitializeResult {
            protocol_version: "2025-11-25".into(),
            capabilities: server_caps(false),
            server_info: Implementation::new("rs-server", "0.1.0"),
            instructions: Some("hi".into()),
            meta: None,
            extra: JsonObject::new(),
        },
    );
    let cache = |modern: bool| {
        if modern {
            (
                Some(0),
                Some(CacheScope::Private),
                complete.clone(),
                server_meta(),
            )
        } else {
            (None, None, None, None)
        }
    };
    for (rev, modern) in [(m, true), (l, false)] {
        let (ttl_ms, cache_scope, result_type, meta) = cache(modern);
        let mut legacy_tool = tool();
        if !modern {
            legacy_tool.execution = Some(ToolExecution {
                task_support: Some("optional".into()),
                extra: JsonObject::new(),
            });
        }
        let tools = ListToolsResult {
            tools: vec![legacy_tool],
            next_cursor: Some("n".into()),
            ttl_ms,
            cache_scope,
            result_type: result_type.clone(),
            meta: meta.clone(),
            extra: JsonObject::new(),
        };
        c.add(rev, "ListToolsResult", &tools);
        let call = CallToolResult {
            content: every_content_block(),
            structured_content: Some(json!({"result": "ok"})),
            is_error: Some(false),
            result_type: result_type.clone(),
            meta: meta.clone(),
            extra: JsonObject::new(),
        };
        c.add(rev, "CallToolResult", &call);
        let prompts = ListPromptsResult {
            prompts: vec![Prompt {
                name: "briefing".into(),
                title: Some("Briefing".into()),
                description: Some("Draft a briefing tuned to its audience.".into()),
                arguments: Some(vec![PromptArgument {
                    name: "topic".into(),
                    title: None,
                    description: Some("t".into()),
                    required: Some(true),
                    extra: JsonObject::new(),
                }]),
                icons: Some(vec![icon()]),
                meta: None,
                extra: JsonObject::new(),
            }],
            next_cursor: None,
            ttl_ms,
            cache_scope,
            result_type: result_type.clone(),
            meta: meta.clone(),
            extra: JsonObject::new(),
        };
        c.add(rev, "ListPromptsResult", &prompts);
        let prompt = GetPromptResult {
            description: Some("d".into()),
            messages: vec![
                PromptMessage::user("Write a briefing for engineers."),
                PromptMessage::assistant("ok"),
            ],
            result_type: result_type.clone(),
            meta: meta.clone(),
            extra: JsonObject::new(),
        };
        c.add(rev, "GetPromptResult", &prompt);
        let resources = ListResourcesResult {
            resources: vec![Resource {
                uri: "file:///a.txt".into(),
                name: "a".into(),
                title: Some("A".into()),
                description: Some("a".into()),
                mime_type: Some("text/plain".into()),
                size: Some(1),
                icons: None,
                annotations: Some(annotations()),
                meta: None,
                extra: JsonObject::new(),
            }],
            next_cursor: None,
            ttl_ms,
            cache_scope,
            result_type: result_type.clone(),
            meta: meta.clone(),
            extra: JsonObject::new(),
        };
        c.add(rev, "ListResourcesResult", &resources);
        let templates = ListResourceTemplatesResult {
            resource_templates: vec![ResourceTemplate {
                uri_template: "vault://{item}".into(),
                name: "vault".into(),
                title: None,
                description: Some("items".into()),
                mime_type: Some("text/plain".into()),
                icons: None,
                annotations: None,
                meta: None,
                extra: JsonObject::new(),
            }],
            next_cursor: None,
            ttl_ms,
            cache_scope,
            result_type: result_type.clone(),
            meta: meta.clone(),
            extra: JsonObject::new(),
        };
        c.add(rev, "ListResourceTemplatesResult", &templates);
        let read = ReadResourceResult {
            contents: vec![
                ResourceContents::text("vault://item", "secret"),
                ResourceContents::blob("vault://bin", "AA=="),
            ],
            ttl_ms,
            cache_scope,
            result_type: result_type.clone(),
            meta: meta.clone(),
            extra: JsonObject::new(),
        };
        c.add(rev, "ReadResourceResult", &read);
        let completion = CompleteResult {
            completion: Completion {
                values: vec!["engineers".into()],
                total: Some(1),
                has_more: Some(false),
                extra: JsonObject::new(),
            },
            result_type: result_type.clone(),
            meta: meta.clone(),
            extra: JsonObject::new(),
        };
        c.add(rev, "CompleteResult", &completion);
        c.add(
            rev,
            "EmptyResult",
            EmptyResult {
                result_type: result_type.clone(),
                meta: meta.clone(),
                extra: JsonObject::new(),
            },
        );
        c.add(rev, "CreateMessageResult", create_message_result());
        c.add(rev, "ElicitResult", elicit_accept());
        c.add(rev, "ElicitResult", ElicitResult::decline());
        c.add(rev, "ElicitResult", ElicitResult::cancel());
        c.add(rev, "ListRootsResult", roots_result());
        if !modern {
            for result in [
                json!(&tools),
                json!(&call),
                json!(&prompts),
                json!(&prompt),
                json!(&read),
                json!(&completion),
            ] {
                c.add(l, "JSONRPCResultResponse", response(&result));
            }
        }
        if modern {
            c.add(m, "ListToolsResultResponse", response(&tools));
            c.add(m, "CallToolResultResponse", response(&call));
            c.add(m, "ListPromptsResultResponse", response(&prompts));
            c.add(m, "GetPromptResultResponse", response(&prompt));
            c.add(m, "ListResourcesResultResponse", response(&resources));
            c.add(
                m,
                "ListResourceTemplatesResultResponse",
                response(&templates),
            );
            c.add(m, "ReadResourceResultResponse", response(&read));
            c.add(m, "CompleteResultResponse", response(&completion));
        }
    }
    let mut input_required = InputRequiredResult::new(input_requests(), Some("v1.sealed".into()));
    input_required.meta = server_meta();
    c.add(m, "InputRequiredResult", &input_required);
    c.add(
        m,
        "InputRequiredResult",
        InputRequiredResult::state_only("poll-1"),
    );
    c.add(m, "CallToolResultResponse", response(&input_required));
    c.add(m, "GetPromptResultResponse", response(&input_required));
    c.add(m, "ReadResourceResultResponse", response(&input_required));
    let listen_end = EmptyResult {
        result_type: complete.clone(),
        meta: Some(Meta {
            subscription_id: Some("listen-1".into()),
            ..server_meta().unwrap()
        }),
        extra: JsonObject::new(),
    };
    c.add(m, "SubscriptionsListenResult", &listen_end);
    c.add(
        m,
        "SubscriptionsListenResultResponse",
        response(&listen_end),
    );
    c.add(
        l,
        "CreateTaskResult",
        CreateTaskResult {
            task: task(),
            meta: None,
            extra: JsonObject::new(),
        },
    );
    c.add(l, "GetTaskResult", task());
    c.add(
        l,
        "CancelTaskResult",
        Task {
            status: TaskStatus::Cancelled,
            ..task()
        },
    );
    c.add(
        l,
        "ListTasksResult",
        ListTasksResult {
            tasks: vec![task()],
            next_cursor: None,
            meta: None,
            extra: JsonObject::new(),
        },
    );
    c.add(l, "GetTaskPayloadResult", EmptyResult::default());

    // Errors.
    let errors = [
        (
            "ParseError",
            ErrorObject::new(ErrorCode::PARSE_ERROR, "Parse error"),
        ),
        (
            "InvalidRequestError",
            ErrorObject::new(ErrorCode::INVALID_REQUEST, "Invalid Request"),
        ),
        ("MethodNotFoundError", ErrorObject::method_not_found("ping")),
        (
            "InvalidParamsError",
            ErrorObject::invalid_params("Invalid or expired requestState"),
        ),
        (
            "InternalError",
            ErrorObject::internal("Handler returned an invalid result"),
        ),
    ];
    for (def, error) in errors {
        c.add(m, def, &error);
        c.both(
            "JSONRPCErrorResponse",
            error_response(error.clone()),
            error_response(error),
        );
    }
    c.add(
        m,
        "HeaderMismatchError",
        error_response(ErrorObject::header_mismatch(
            "mcp-name header does not match",
        )),
    );
    c.add(
        m,
        "MissingRequiredClientCapabilityError",
        error_response(ErrorObject::missing_required_client_capability(
            "Client did not declare the form elicitation capability",
            ClientCapabilities::form_elicitation(),
        )),
    );
    c.add(
        m,
        "UnsupportedProtocolVersionError",
        error_response(ErrorObject::unsupported_protocol_version(
            &["2026-07-28", "2025-11-25"],
            "v999.0.0",
        )),
    );
    let url_required = UrlElicitationRequiredData {
        elicitations: vec![url_params(true)],
        extra: JsonObject::new(),
    };
    c.add(
        l,
        "URLElicitationRequiredError",
        error_response(
            ErrorObject::new(
                ErrorCode::LEGACY_URL_ELICITATION_REQUIRED,
                "URL elicitation required",
            )
            .with_data(serde_json::to_value(url_required).unwrap()),
        ),
    );

    // Building blocks, each also covered on its own.
    for rev in [m, l] {
        c.add(rev, "ClientCapabilities", client_caps(rev == m));
        c.add(rev, "ServerCapabilities", server_caps(rev == m));
        c.add(rev, "Implementation", Implementation::new("x", "1"));
        for block in every_content_block() {
            c.add(rev, "ContentBlock", &block);
        }
        c.add(rev, "ElicitRequestFormParams", form_params(rev == l));
        c.add(rev, "ElicitRequestURLParams", url_params(rev == l));
        c.add(rev, "CreateMessageRequestParams", sampling_params(rev == l));
        c.add(rev, "Tool", tool());
        c.add(rev, "Annotations", annotations());
        c.add(rev, "Icon", icon());
        for (_, property) in form_schema().properties {
            c.add(rev, "PrimitiveSchemaDefinition", property);
        }
        c.add(
            rev,
            "Error",
            ErrorObject::internal("boom").with_data(json!({"detail": 1})),
        );
        c.add(rev, "Role", Role::Assistant);
        c.add(rev, "LoggingLevel", LoggingLevel::Emergency);
        c.add(rev, "RequestId", mcp_types::RequestId::from("abc"));
        c.add(rev, "ProgressToken", mcp_types::RequestId::from(3));
        c.add(rev, "Root", Root::new("file:///x", None));
        c.add(rev, "PromptMessage", PromptMessage::user("hi"));
        c.add(rev, "TextContent", ContentBlock::text("hi"));
        c.add(
            rev,
            "ImageContent",
            ContentBlock::Image(BinaryContent::new("aGk=", "image/png")),
        );
        c.add(
            rev,
            "AudioContent",
            ContentBlock::Audio(BinaryContent::new("aGk=", "audio/wav")),
        );
        c.add(
            rev,
            "ModelPreferences",
            sampling_params(false).model_preferences,
        );
        c.add(rev, "ToolAnnotations", tool().annotations);
        c.add(
            rev,
            "ElicitRequestParams",
            ElicitRequestParams::Form(form_params(rev == l)),
        );
        c.add(
            rev,
            "ElicitRequestParams",
            ElicitRequestParams::Url(url_params(rev == l)),
        );
        c.add(rev, "SamplingMessage", &sampling_params(false).messages[0]);
        for message in sampling_params(false).messages {
            for block in message.content.as_slice() {
                c.add(rev, "SamplingMessageContentBlock", block);
            }
        }
    }
    for (_, request) in input_requests() {
        c.add(m, "InputRequest", request);
    }
    // Every whole message also validates against the generic envelope definitions.
    let generic: Vec<Case> =
        c.0.iter()
            .filter(|case| {
                case.value.get("jsonrpc").is_some() && !matches!(case.def, "JSONRPCErrorResponse")
            })
            .flat_map(|case| {
                let kind = if case.value.get("error").is_some() {
                    "JSONRPCErrorResponse"
                } else if case.value.get("result").is_some() {
                    "JSONRPCResultResponse"
                } else if case.value.get("id").is_some() {
                    "JSONRPCRequest"
                } else {
                    "JSONRPCNotification"
                };
                let response = kind.ends_with("Response").then_some("JSONRPCResponse");
                [Some(kind), Some("JSONRPCMessage"), response]
                    .into_iter()
                    .flatten()
                    .map(|def| Case {
                        rev: case.rev,
                        def,
                        value: case.value.clone(),
                    })
                    .collect::<Vec<_>>()
            })
            .collect();
    c.0.extend(generic);
    c
}

/// Definitions that name a whole message, a result or an error: these must all be covered.
fn is_message_def(def: &str) -> bool {
    const ABSTRACT: [&str; 10] = [
        "Request",
        "Notification",
        "Result",
        "PaginatedRequest",
        "PaginatedResult",
        "CacheableResult",
        "ClientRequest",
        "ServerRequest",
        "ClientNotification",
        "ServerNotification",
    ];
    const OTHER: [&str; 2] = ["ClientResult", "ServerResult"];
    if ABSTRACT.contains(&def) || OTHER.contains(&def) {
        return false;
    }
    [
        "Request",
        "Notification",
        "Result",
        "ResultResponse",
        "Error",
    ]
    .iter()
    .any(|s| def.ends_with(s))
}

#[test]
fn rust_values_validate_against_the_official_schema_of_their_revision() {
    let spec = common::fixtures_dir().join("schemas");
    let mut coverage: BTreeMap<Rev, (BTreeSet<String>, BTreeSet<&'static str>)> = BTreeMap::new();
    let mut failures = Vec::new();
    let all_cases = cases();
    for (rev, file) in [
        (Rev::Modern, "2026-07-28.schema.json"),
        (Rev::Legacy, "2025-11-25.schema.json"),
    ] {
        let schema: Value =
            serde_json::from_str(&std::fs::read_to_string(spec.join(file)).unwrap()).unwrap();
        let defs: BTreeSet<String> = schema["$defs"]
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect();
        let url = format!("urn:mcp:{file}");
        let mut compiler = boon::Compiler::new();
        compiler.add_resource(&url, schema).unwrap();
        let mut schemas = boon::Schemas::new();
        let mut covered = BTreeSet::new();
        for case in all_cases.0.iter().filter(|c| c.rev == rev) {
            assert!(
                defs.contains(case.def),
                "{file} has no definition {}",
                case.def
            );
            let index = compiler
                .compile(&format!("{url}#/$defs/{}", case.def), &mut schemas)
                .unwrap();
            match schemas.validate(&case.value, index) {
                Ok(()) => {
                    covered.insert(case.def);
                }
                Err(e) => failures.push(format!(
                    "{file} {}: {e:#}\n  value: {}",
                    case.def, case.value
                )),
            }
        }
        coverage.insert(rev, (defs, covered));
    }
    assert!(
        failures.is_empty(),
        "{} values failed validation:\n{}",
        failures.len(),
        failures.join("\n")
    );

    let mut missing = Vec::new();
    for (rev, (defs, covered)) in &coverage {
        let messages: Vec<_> = defs.iter().filter(|d| is_message_def(d)).collect();
        let uncovered: Vec<_> = messages
            .iter()
            .filter(|d| !covered.contains(d.as_str()))
            .collect();
        eprintln!(
            "{rev:?}: {} of {} message types covered; {} of {} definitions covered in all",
            messages.len() - uncovered.len(),
            messages.len(),
            covered.len(),
            defs.len()
        );
        missing.extend(uncovered.iter().map(|d| format!("{rev:?} {d}")));
    }
    assert!(
        missing.is_empty(),
        "message types with no validated value: {missing:?}"
    );
}

#[test]
fn an_invalid_value_is_caught_by_the_validator() {
    // The check above can fail: a modern request without its envelope is rejected.
    let spec = common::fixtures_dir().join("schemas/2026-07-28.schema.json");
    let schema: Value = serde_json::from_str(&std::fs::read_to_string(spec).unwrap()).unwrap();
    let mut compiler = boon::Compiler::new();
    compiler.add_resource("urn:s", schema).unwrap();
    let mut schemas = boon::Schemas::new();
    let index = compiler
        .compile("urn:s#/$defs/ListToolsRequest", &mut schemas)
        .unwrap();
    let value = request(ClientRequest::ListTools(Some(
        PaginatedRequestParams::default(),
    )));
    assert!(schemas.validate(&value, index).is_err());
}

/// Audit section 5: the method table against the official schemas, not against counts
/// restated by hand. Every request and notification each revision's unions
/// (`ClientRequest`, `ServerRequest`, `ClientNotification`, `ServerNotification`) name is in
/// the table for that era, kind and direction, and the table names no other.
#[test]
fn the_method_table_is_the_schemas_unions() {
    use mcp_types::methods::{Direction, Kind, methods_of};
    use mcp_types::version::Era;
    let spec = common::fixtures_dir().join("schemas");
    let mut compared = 0;
    for (file, era) in [
        ("2026-07-28.schema.json", Era::Modern),
        ("2025-11-25.schema.json", Era::Legacy),
    ] {
        let schema: Value =
            serde_json::from_str(&std::fs::read_to_string(spec.join(file)).unwrap()).unwrap();
        let defs = &schema["$defs"];
        for (union, kind, direction) in [
            ("ClientRequest", Kind::Request, Direction::ClientToServer),
            ("ServerRequest", Kind::Request, Direction::ServerToClient),
            (
                "ClientNotification",
                Kind::Notification,
                Direction::ClientToServer,
            ),
            (
                "ServerNotification",
                Kind::Notification,
                Direction::ServerToClient,
            ),
        ] {
            let Some(members) = defs[union]["anyOf"].as_array() else {
                continue;
            };
            let official: BTreeSet<String> = members
                .iter()
                .map(|m| {
                    let name = m["$ref"].as_str().unwrap().rsplit('/').next().unwrap();
                    defs[name]["properties"]["method"]["const"]
                        .as_str()
                        .unwrap_or_else(|| panic!("{file} {name} has no method const"))
                        .to_owned()
                })
                .collect();
            let ours: BTreeSet<String> = methods_of(era, kind, direction)
                .map(str::to_owned)
                .collect();
            assert_eq!(ours, official, "{file} {union}");
            compared += 1;
        }
    }
    // Six unions: four of 2025-11-25, two of 2026-07-28 (it has no server requests and no
    // client notification union).
    assert_eq!(compared, 6);
}
