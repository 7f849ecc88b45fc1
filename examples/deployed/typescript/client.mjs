// The deployed base's TypeScript client: drives an interop server (examples/interop_server.rs)
// through every 2025-11-25 flow with the TypeScript SDK v1's `Client` (`@modelcontextprotocol/sdk`
// 1.32.2), answering its live questions from a script and checking the exact texts. One line
// per flow; exit status 1 on any mismatch.
//
//     node client.mjs --url http://127.0.0.1:8000/mcp
//     node client.mjs -- path/to/interop-server --stdio
//
// The SDK v1 client knows only the `initialize` handshake: against a dual-era server it must
// end up in a 2025-11-25 session, which is what every deployed TypeScript host does.

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
    CreateMessageRequestSchema,
    ElicitRequestSchema,
    ListRootsRequestSchema,
} from '@modelcontextprotocol/sdk/types.js';

const LEGACY = '2025-11-25';

class Mismatch extends Error {}

function expect(what, got, want) {
    const g = JSON.stringify(got);
    const w = JSON.stringify(want);
    if (g !== w) throw new Mismatch(`${what}: got ${g}, want ${w}`);
}

/** The answers the callbacks give, set by each flow, and the questions they saw. */
const script = {
    answers: [],
    asked: [],
    schemas: [],
    sampled: [],
    rooted: 0,
    reset(...answers) {
        this.answers = answers;
        this.asked = [];
        this.schemas = [];
        this.sampled = [];
        this.rooted = 0;
    },
};

const accept = (content) => ({ action: 'accept', content });

function toolText(result) {
    if (result.isError) throw new Mismatch(`tool error: ${JSON.stringify(result.content)}`);
    const first = result.content[0];
    if (first?.type !== 'text') throw new Mismatch(`not text: ${JSON.stringify(first)}`);
    return first.text;
}

/** The schema's fields and their types, sorted by name. */
function fields(schema) {
    return Object.entries(schema?.properties ?? {})
        .map(([name, p]) => [name, p.type])
        .sort();
}

function deleteProject(answer, want) {
    return async (client) => {
        script.reset(answer);
        const got = toolText(await client.callTool({ name: 'delete_folder', arguments: { path: '/tmp/project' } }));
        expect('questions', script.asked, ['/tmp/project has 2 file(s). Delete anyway?']);
        expect('schema', fields(script.schemas[0]), [['ok', 'boolean']]);
        expect('text', got, want);
    };
}

const FLOWS = [
    [
        'a. delete_folder /tmp/empty (no question)',
        async (client) => {
            script.reset();
            const got = toolText(await client.callTool({ name: 'delete_folder', arguments: { path: '/tmp/empty' } }));
            expect('questions', script.asked, []);
            expect('text', got, 'deleted /tmp/empty');
        },
    ],
    ['a. delete_folder accept', deleteProject(accept({ ok: true }), 'deleted /tmp/project')],
    ['a. delete_folder accept ok=false', deleteProject(accept({ ok: false }), 'kept the folder')],
    ['a. delete_folder decline', deleteProject({ action: 'decline' }, 'declined: folder not deleted')],
    ['a. delete_folder cancel', deleteProject({ action: 'cancel' }, 'cancelled: folder not deleted')],
    [
        'b. plan_trip (sampling + roots)',
        async (client) => {
            script.reset();
            const got = toolText(await client.callTool({ name: 'plan_trip', arguments: { city: 'Lisbon' } }));
            expect('sampled', script.sampled, ['Plan a day in Lisbon']);
            expect('roots asked', script.rooted, 1);
            expect('text', got, 'Tram 28, then the castle (saved to file:///trips)');
        },
    ],
    [
        'c. prompt briefing',
        async (client) => {
            script.reset(accept({ audience: 'the board' }));
            const result = await client.getPrompt({ name: 'briefing', arguments: {} });
            expect('questions', script.asked, ['Who is the briefing for?']);
            expect('schema', fields(script.schemas[0]), [['audience', 'string']]);
            expect('messages', result.messages, [
                { role: 'user', content: { type: 'text', text: 'Write a briefing for the board.' } },
            ]);
        },
    ],
    [
        'c. resource vault://{item}',
        async (client) => {
            script.reset(accept({ ok: true }));
            const result = await client.readResource({ uri: 'vault://keys' });
            expect('questions', script.asked, ['Unlock keys?']);
            expect('contents', result.contents, [{ uri: 'vault://keys', mimeType: 'text/plain', text: 'the keys secret' }]);
        },
    ],
    [
        'd. provision (asked live)',
        async (client) => {
            script.reset(accept({ region: 'eu-west-1' }));
            const got = toolText(await client.callTool({ name: 'provision', arguments: { name: 'orders' } }));
            expect('questions', script.asked, ['Which region should the database live in?']);
            expect('schema', fields(script.schemas[0]), [['region', 'string']]);
            expect('text', got, "Provisioned 'orders' in eu-west-1.");
        },
    ],
    [
        'e. order (three questions)',
        async (client) => {
            script.reset(accept({ name: 'Ada' }), accept({ color: 'green' }), accept({ size: 3 }));
            const got = toolText(await client.callTool({ name: 'order', arguments: {} }));
            expect('questions', script.asked, ['Your name?', 'Ada, your favourite colour?', 'How big, in green?']);
            expect('text', got, 'Ada ordered size 3 in green.');
        },
    ],
];

function parseArgs(argv) {
    const split = argv.indexOf('--');
    const own = split === -1 ? argv : argv.slice(0, split);
    const command = split === -1 ? [] : argv.slice(split + 1);
    const at = own.indexOf('--url');
    const url = at === -1 ? undefined : own[at + 1];
    if ((url === undefined) === (command.length === 0)) {
        console.error('usage: node client.mjs (--url URL | -- COMMAND ARGS...)');
        process.exit(2);
    }
    return { url, command };
}

const { url, command } = parseArgs(process.argv.slice(2));
const client = new Client(
    { name: 'interop-deployed-typescript-client', version: '1.0.0' },
    { capabilities: { elicitation: { form: {} }, sampling: {}, roots: { listChanged: false } } },
);
client.setRequestHandler(ElicitRequestSchema, async (request) => {
    script.asked.push(request.params.message);
    script.schemas.push(request.params.requestedSchema);
    return script.answers.shift() ?? { action: 'cancel' };
});
client.setRequestHandler(CreateMessageRequestSchema, async (request) => {
    const content = request.params.messages[0].content;
    script.sampled.push(content.type === 'text' ? content.text : JSON.stringify(content));
    return {
        role: 'assistant',
        content: { type: 'text', text: 'Tram 28, then the castle' },
        model: 'interop-model',
        stopReason: 'endTurn',
    };
});
client.setRequestHandler(ListRootsRequestSchema, async () => {
    script.rooted += 1;
    return { roots: [{ uri: 'file:///trips', name: 'trips' }] };
});

const transport = url
    ? new StreamableHTTPClientTransport(new URL(url))
    : new StdioClientTransport({ command: command[0], args: command.slice(1), stderr: 'inherit' });
try {
    await client.connect(transport);
} catch (e) {
    console.log(`FAIL  connect: ${e.message}`);
    process.exit(1);
}
let failures = 0;
const negotiated = transport.protocolVersion ?? LEGACY;
if (negotiated !== LEGACY) {
    console.log(`FAIL  negotiated version: got ${negotiated}, want ${LEGACY}`);
    failures += 1;
}
for (const [name, flow] of FLOWS) {
    try {
        await Promise.race([
            flow(client),
            new Promise((_, reject) => setTimeout(() => reject(new Error('timed out after 60 s')), 60_000).unref()),
        ]);
        console.log(`ok    ${name}`);
    } catch (e) {
        failures += 1;
        console.log(`FAIL  ${name}: ${e.message}`);
    }
}
await client.close();
console.log(`typescript v1 client, era ${LEGACY}: ${FLOWS.length - failures} passed, ${failures} failed`);
process.exit(failures === 0 ? 0 : 1);
