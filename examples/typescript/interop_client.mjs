// Drives an interop server (examples/interop_server.rs, interop_server.py or interop_server.mjs)
// through every flow with the TypeScript SDK v2's `Client` (`@modelcontextprotocol/client`
// 2.4.0), checking the exact texts: the twin of examples/python/interop_client.py. One line
// per flow; exit status 1 on any mismatch.
//
//     node interop_client.mjs --era 2026-07-28 --url http://127.0.0.1:8000/mcp
//     node interop_client.mjs --era 2025-11-25 -- path/to/interop-server --stdio
//
// `--era 2026-07-28` pins the stateless revision (`versionNegotiation: { mode: { pin } }`: a
// `server/discover` probe that must offer it, no fallback); `--era 2025-11-25` runs the legacy
// initialize handshake (the SDK's default). `--probe` connects with `mode: 'auto'` instead (probe,
// fall back to initialize on a legacy answer) and still requires `--era`'s version.

import { isDeepStrictEqual, inspect } from 'node:util';

import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';

const MODERN = '2026-07-28';
const LEGACY = '2025-11-25';

/** What a flow got differs from what it expected. */
class Mismatch extends Error {}

function expect(what, got, want) {
    if (!isDeepStrictEqual(got, want)) {
        throw new Mismatch(`${what}: got ${inspect(got, { depth: 6 })}, want ${inspect(want, { depth: 6 })}`);
    }
}

/** The answers the callbacks give, set by each flow, and the questions they saw. */
class Script {
    constructor() {
        this.reset();
    }

    reset(...answers) {
        this.answers = answers;
        this.asked = [];
        this.schemas = [];
        this.sampled = [];
        this.rooted = 0;
    }

    elicit(params) {
        this.asked.push(params.message);
        this.schemas.push(params.requestedSchema ?? {});
        return this.answers.shift() ?? { action: 'cancel' };
    }

    sample(params) {
        const content = params.messages[0]?.content;
        this.sampled.push(content?.type === 'text' ? content.text : inspect(content));
        return {
            role: 'assistant',
            content: { type: 'text', text: 'Tram 28, then the castle' },
            model: 'interop-model',
            stopReason: 'endTurn'
        };
    }

    listRoots() {
        this.rooted += 1;
        return { roots: [{ uri: 'file:///trips', name: 'trips' }] };
    }
}

const accept = content => ({ action: 'accept', content });

function toolText(result) {
    if (result.isError) throw new Mismatch(`tool error: ${inspect(result.content)}`);
    const first = result.content?.[0];
    if (first?.type !== 'text') throw new Mismatch(`not text: ${inspect(first)}`);
    return first.text;
}

/** The sorted required names and the property types of an elicitation schema. */
function requiredFields(schema) {
    const types = Object.fromEntries(Object.entries(schema.properties ?? {}).map(([k, v]) => [k, v.type]));
    return [[...(schema.required ?? [])].sort(), types];
}

/**
 * One leg of a tool call driven by hand: `allowInputRequired` hands an input_required result
 * back instead of fulfilling it. The retry fields ride at the top level of the params, as the
 * spec puts them; the SDK's public `CallToolRequest` type leaves them out, plain JS does not.
 */
async function leg(client, name, args, inputResponses, requestState) {
    const params = { name, arguments: args };
    if (inputResponses !== undefined) params.inputResponses = inputResponses;
    if (requestState !== undefined) params.requestState = requestState;
    return client.callTool(params, { allowInputRequired: true });
}

function isInputRequired(result) {
    return result?.resultType === 'input_required';
}

// ---------------------------------------------------------------------------------------------
// The flows.

async function deleteEmpty(client, script) {
    script.reset();
    const result = await client.callTool({ name: 'delete_folder', arguments: { path: '/tmp/empty' } });
    expect('text', toolText(result), 'deleted /tmp/empty');
    expect('questions', script.asked, []);
}

function deleteProject(answer, want) {
    return async (client, script) => {
        script.reset(answer);
        const result = await client.callTool({ name: 'delete_folder', arguments: { path: '/tmp/project' } });
        expect('questions', script.asked, ['/tmp/project has 2 file(s). Delete anyway?']);
        expect('schema', requiredFields(script.schemas[0]), [['ok'], { ok: 'boolean' }]);
        expect('text', toolText(result), want);
    };
}

async function planTrip(client, script, era) {
    if (era === MODERN) {
        // Both questions come back in the first round, side by side.
        script.reset();
        const first = await leg(client, 'plan_trip', { city: 'Lisbon' });
        if (!isInputRequired(first)) throw new Mismatch(`first round is not input_required: ${inspect(first)}`);
        const methods = Object.values(first.inputRequests ?? {})
            .map(r => r.method)
            .sort();
        expect('methods of the first round', methods, ['roots/list', 'sampling/createMessage']);
    }
    script.reset();
    const result = await client.callTool({ name: 'plan_trip', arguments: { city: 'Lisbon' } });
    expect('sampled', script.sampled, ['Plan a day in Lisbon']);
    expect('roots asked', script.rooted, 1);
    expect('text', toolText(result), 'Tram 28, then the castle (saved to file:///trips)');
}

async function briefing(client, script) {
    script.reset(accept({ audience: 'the board' }));
    const result = await client.getPrompt({ name: 'briefing' });
    expect('questions', script.asked, ['Who is the briefing for?']);
    expect('schema', requiredFields(script.schemas[0]), [['audience'], { audience: 'string' }]);
    expect('messages', result.messages.length, 1);
    const [message] = result.messages;
    expect('role', message.role, 'user');
    expect('text', message.content?.type === 'text' ? message.content.text : message.content, 'Write a briefing for the board.');
}

async function vault(client, script) {
    script.reset(accept({ ok: true }));
    const result = await client.readResource({ uri: 'vault://keys' });
    expect('questions', script.asked, ['Unlock keys?']);
    expect('contents', result.contents.length, 1);
    const [contents] = result.contents;
    expect('uri', contents.uri, 'vault://keys');
    expect('mimeType', contents.mimeType, 'text/plain');
    expect('text', contents.text, 'the keys secret');
}

async function provision(client, script, era) {
    if (era === MODERN) {
        // The hand-built round: key "region", the form question, and a requestState.
        script.reset();
        const first = await leg(client, 'provision', { name: 'orders' });
        if (!isInputRequired(first)) throw new Mismatch(`first round is not input_required: ${inspect(first)}`);
        const requests = first.inputRequests ?? {};
        expect('keys', Object.keys(requests).sort(), ['region']);
        const request = requests.region;
        if (request.method !== 'elicitation/create') throw new Mismatch(`not an elicitation: ${inspect(request)}`);
        expect('question', request.params.message, 'Which region should the database live in?');
        if (!first.requestState) throw new Mismatch('no requestState in the hand-built round');
    }
    script.reset(accept({ region: 'eu-west-1' }));
    const result = await client.callTool({ name: 'provision', arguments: { name: 'orders' } });
    expect('questions', script.asked, ['Which region should the database live in?']);
    expect('schema', requiredFields(script.schemas[0]), [['region'], { region: 'string' }]);
    expect('text', toolText(result), "Provisioned 'orders' in eu-west-1.");
}

const ORDER_QUESTIONS = ['Your name?', 'Ada, your favourite colour?', 'How big, in green?'];
const ORDER_ANSWERS = [{ name: 'Ada' }, { color: 'green' }, { size: 3 }];

async function order(client, script, era) {
    if (era === MODERN) {
        // Drive the rounds by hand to count them: one question per round, three rounds.
        let rounds = 0;
        let responses;
        let state;
        let result;
        for (;;) {
            result = await leg(client, 'order', {}, responses, state);
            if (!isInputRequired(result)) break;
            const entries = Object.entries(result.inputRequests ?? {});
            if (entries.length !== 1 || rounds >= ORDER_QUESTIONS.length) {
                throw new Mismatch(`round ${rounds + 1} asked ${inspect(result.inputRequests)}`);
            }
            const [[key, request]] = entries;
            if (request.method !== 'elicitation/create') throw new Mismatch(`not an elicitation: ${inspect(request)}`);
            expect(`question ${rounds + 1}`, request.params.message, ORDER_QUESTIONS[rounds]);
            responses = { [key]: accept(ORDER_ANSWERS[rounds]) };
            state = result.requestState;
            rounds += 1;
        }
        expect('rounds', rounds, 3);
        expect('text (manual loop)', toolText(result), 'Ada ordered size 3 in green.');
    }
    script.reset(...ORDER_ANSWERS.map(accept));
    const result = await client.callTool({ name: 'order', arguments: {} });
    expect('questions', script.asked, ORDER_QUESTIONS);
    expect('text', toolText(result), 'Ada ordered size 3 in green.');
}

const FLOWS = [
    ['a. delete_folder /tmp/empty (no question)', deleteEmpty],
    ['a. delete_folder accept', deleteProject(accept({ ok: true }), 'deleted /tmp/project')],
    ['a. delete_folder accept ok=false', deleteProject(accept({ ok: false }), 'kept the folder')],
    ['a. delete_folder decline', deleteProject({ action: 'decline' }, 'declined: folder not deleted')],
    ['a. delete_folder cancel', deleteProject({ action: 'cancel' }, 'cancelled: folder not deleted')],
    ['b. plan_trip (sampling + roots in one round)', planTrip],
    ['c. prompt briefing', briefing],
    ['c. resource vault://{item}', vault],
    ['d. provision (hand-built state)', provision],
    ['e. order (three rounds)', order]
];

/** Rejects after `ms`, so one stuck flow cannot hold the rest. */
function withDeadline(promise, ms) {
    let timer;
    const deadline = new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Mismatch(`timed out after ${ms / 1000} s`)), ms);
    });
    return Promise.race([promise, deadline]).finally(() => clearTimeout(timer));
}

function describe(error) {
    if (error instanceof Mismatch) return error.message;
    const code = error?.code !== undefined ? ` (code ${error.code})` : '';
    return `${error?.name ?? 'Error'}${code}: ${error?.message ?? inspect(error)}`;
}

async function run(target, era, probe) {
    const script = new Script();
    const client = new Client(
        { name: 'interop-client', version: '0.1.0' },
        {
            capabilities: { elicitation: { form: {} }, sampling: {}, roots: {} },
            versionNegotiation: { mode: probe ? 'auto' : era === MODERN ? { pin: MODERN } : 'legacy' }
        }
    );
    // Out-of-band errors (dropped or unparsable messages) go to stderr, where the xtask keeps them;
    // closing aborts the legacy GET stream, which the SDK reports as an AbortError: not news.
    let closing = false;
    client.onerror = error => {
        if (!(closing && error?.name === 'AbortError')) console.error(`interop client: ${error?.stack ?? error}`);
    };
    client.setRequestHandler('elicitation/create', async request => script.elicit(request.params));
    client.setRequestHandler('sampling/createMessage', async request => script.sample(request.params));
    client.setRequestHandler('roots/list', async () => script.listRoots());
    const transport =
        target.url !== undefined
            ? new StreamableHTTPClientTransport(new URL(target.url))
            : new StdioClientTransport({ command: target.command[0], args: target.command.slice(1), stderr: 'inherit' });
    await client.connect(transport, { timeout: 30_000 });
    let failures = 0;
    try {
        expect('negotiated version', client.getNegotiatedProtocolVersion(), era);
        for (const [name, flow] of FLOWS) {
            try {
                await withDeadline(flow(client, script, era), 60_000);
                console.log(`ok    ${name}`);
            } catch (error) {
                failures += 1;
                console.log(`FAIL  ${name}: ${describe(error)}`);
            }
        }
    } finally {
        closing = true;
        // A 2025-11-25 HTTP session is ended by DELETE, which clients SHOULD send when done;
        // the SDK's close() only aborts its streams (StreamableHTTPClientTransport.close in
        // @modelcontextprotocol/client 2.4.0 dist/index.mjs) and leaves the DELETE to
        // terminateSession(), so a careful user calls it first, as here.
        if (transport instanceof StreamableHTTPClientTransport && client.getProtocolEra() === 'legacy') {
            await transport.terminateSession().catch(error => console.error(`interop client: ${error}`));
        }
        await client.close();
    }
    return failures;
}

function parseArgs(argv) {
    let era = MODERN;
    let url;
    let command = [];
    let probe = false;
    for (let i = 0; i < argv.length; i++) {
        const arg = argv[i];
        if (arg === '--era') era = argv[++i];
        else if (arg === '--url') url = argv[++i];
        else if (arg === '--probe') probe = true;
        else if (arg === '--') {
            command = argv.slice(i + 1);
            break;
        } else throw new Error(`unknown argument \`${arg}\``);
    }
    if (era !== MODERN && era !== LEGACY) throw new Error(`--era must be ${MODERN} or ${LEGACY}, not ${era}`);
    if ((url === undefined) === (command.length === 0)) throw new Error('give exactly one of --url URL or -- COMMAND ARGS...');
    return { era, probe, target: url !== undefined ? { url } : { command } };
}

async function main() {
    let parsed;
    try {
        parsed = parseArgs(process.argv.slice(2));
    } catch (error) {
        console.error(`${error.message}\nusage: node interop_client.mjs [--era ${MODERN}|${LEGACY}] [--probe] (--url URL | -- COMMAND ARGS...)`);
        process.exit(2);
    }
    let failures;
    try {
        failures = await run(parsed.target, parsed.era, parsed.probe);
    } catch (error) {
        console.log(`FAIL  connect: ${describe(error)}`);
        process.exit(1);
    }
    console.log(`typescript client, era ${parsed.era}: ${FLOWS.length - failures} passed, ${failures} failed`);
    process.exit(failures ? 1 : 0);
}

await main();
