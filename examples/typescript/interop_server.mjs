// The TypeScript twin of examples/interop_server.rs and examples/python/interop_server.py: the
// same tools, prompt and resource, with the same names, questions, schemas and texts, written
// with the TypeScript SDK v2 (`@modelcontextprotocol/server` 2.4.0).
//
//     node interop_server.mjs [--stdio | --http PORT]
//
// Over HTTP it serves Streamable HTTP at http://127.0.0.1:PORT/mcp. Both eras work on either
// transport: a 2026-07-28 client gets InputRequiredResult rounds, a 2025-11-25 client gets an
// initialize handshake and live questions.
//
// Every handler is written once in the 2026 style (`return inputRequired(...)`); on a
// 2025-11-25 connection the SDK's legacy shim turns each embedded request into a real
// server->client request and re-enters the handler with the answers. The TypeScript SDK has no
// resolvers, so multi-round flows carry what they learned in `requestState`, sealed by the
// SDK's HMAC codec (`createRequestStateCodec`) with a key made at startup.
//
// - delete_folder(path): asks only when the folder is not empty.
// - plan_trip(city): sampling and roots asked in the same round.
// - prompt briefing and template resource vault://{item}: a prompt and a resource that ask.
// - provision(name): the Provisioner's round built by hand (key "region", with a requestState).
// - order(): three questions, each depending on the answer before, so three rounds.
//
// HTTP: 2026-07-28 requests go to `createMcpHandler` (strict, `legacy: 'reject'`); 2025-11-25
// requests go to a sessionful `NodeStreamableHTTPServerTransport` per `initialize`, because
// the SDK's default stateless legacy serving has no return path for server->client requests
// (docs/migration/support-2026-07-28.md, "Legacy shim for input_required"). That routing is
// the SDK's own recipe (docs/serving/legacy-clients.md).

import { randomBytes, randomUUID } from 'node:crypto';
import { createServer } from 'node:http';

import { NodeStreamableHTTPServerTransport, toNodeHandler, toWebRequest } from '@modelcontextprotocol/node';
import {
    McpServer,
    ResourceTemplate,
    createMcpHandler,
    createRequestStateCodec,
    inputRequired,
    inputResponse,
    isInitializeRequest,
    isLegacyRequest
} from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import * as z from 'zod';

// One key per process: every round of a flow comes back to this process.
const stateCodec = createRequestStateCodec({ key: randomBytes(32), ttlSeconds: 600 });

/** A form question's schema: one required field of the given JSON type. */
function formSchema(field, type) {
    return { type: 'object', properties: { [field]: { type } }, required: [field] };
}

function ask(message, field, type = 'string') {
    return inputRequired.elicit({ mode: 'form', message, requestedSchema: formSchema(field, type) });
}

function text(value) {
    return { content: [{ type: 'text', text: value }] };
}

/** The accepted value of `field` in this round's answer under `key`, if there is one. */
function accepted(ctx, key, field, type) {
    const view = inputResponse(ctx.mcpReq.inputResponses, key);
    if (view.kind !== 'elicit' || view.action !== 'accept') return undefined;
    const value = view.content?.[field];
    return typeof value === type ? value : undefined;
}

// ---------------------------------------------------------------------------------------------
// (a) Files: ask only when it must.

const FOLDERS = new Map([
    ['/tmp/empty', []],
    ['/tmp/project', ['main.py', 'README.md']]
]);

async function deleteFolder({ path }, ctx) {
    const fileCount = (FOLDERS.get(path) ?? []).length;
    if (fileCount === 0) return text(`deleted ${path}`);
    const answer = inputResponse(ctx.mcpReq.inputResponses, 'confirm');
    if (answer.kind !== 'elicit') {
        return inputRequired({
            inputRequests: { confirm: ask(`${path} has ${fileCount} file(s). Delete anyway?`, 'ok', 'boolean') }
        });
    }
    switch (answer.action) {
        case 'accept':
            return text(answer.content?.ok === true ? `deleted ${path}` : 'kept the folder');
        case 'decline':
            return text('declined: folder not deleted');
        default:
            return text('cancelled: folder not deleted');
    }
}

// ---------------------------------------------------------------------------------------------
// (b) Sampling and roots, two independent questions in one round.

async function planTrip({ city }, ctx) {
    const plan = inputResponse(ctx.mcpReq.inputResponses, 'plan');
    const roots = inputResponse(ctx.mcpReq.inputResponses, 'roots');
    if (plan.kind !== 'sampling' || roots.kind !== 'roots') {
        return inputRequired({
            inputRequests: {
                plan: inputRequired.createMessage({
                    messages: [{ role: 'user', content: { type: 'text', text: `Plan a day in ${city}` } }],
                    maxTokens: 100
                }),
                roots: inputRequired.listRoots()
            }
        });
    }
    const content = Array.isArray(plan.result.content) ? plan.result.content[0] : plan.result.content;
    if (content?.type !== 'text') return { ...text('the model did not answer with text'), isError: true };
    if (roots.roots.length === 0) return { ...text('the client has no roots'), isError: true };
    return text(`${content.text} (saved to ${roots.roots[0].uri})`);
}

// ---------------------------------------------------------------------------------------------
// (c) A prompt and a template resource that ask.

async function briefing(ctx) {
    const answer = inputResponse(ctx.mcpReq.inputResponses, 'audience');
    if (answer.kind === 'elicit' && answer.action !== 'accept') {
        throw new Error(`elicitation was ${answer.action}`);
    }
    const audience = accepted(ctx, 'audience', 'audience', 'string');
    if (audience === undefined) {
        return inputRequired({ inputRequests: { audience: ask('Who is the briefing for?', 'audience') } });
    }
    return { messages: [{ role: 'user', content: { type: 'text', text: `Write a briefing for ${audience}.` } }] };
}

async function vault(uri, { item }, ctx) {
    const answer = inputResponse(ctx.mcpReq.inputResponses, 'unlock');
    if (answer.kind !== 'elicit') {
        return inputRequired({ inputRequests: { unlock: ask(`Unlock ${item}?`, 'ok', 'boolean') } });
    }
    if (answer.action !== 'accept') throw new Error(`elicitation was ${answer.action}`);
    const ok = answer.content?.ok === true;
    return { contents: [{ uri: uri.href, mimeType: 'text/plain', text: ok ? `the ${item} secret` : 'locked' }] };
}

// ---------------------------------------------------------------------------------------------
// (d) The Provisioner: a round built by hand.

const ASK_REGION = 'Which region should the database live in?';

async function provision({ name }, ctx) {
    const answer = inputResponse(ctx.mcpReq.inputResponses, 'region');
    if (answer.kind === 'elicit' && answer.action !== 'accept') {
        return { ...text('no region given'), isError: true };
    }
    const region = accepted(ctx, 'region', 'region', 'string');
    if (region === undefined || ctx.mcpReq.requestState()?.step !== 'provision-v1') {
        return inputRequired({
            inputRequests: { region: ask(ASK_REGION, 'region') },
            requestState: await stateCodec.mint({ step: 'provision-v1' })
        });
    }
    return text(`Provisioned '${name}' in ${region}.`);
}

// ---------------------------------------------------------------------------------------------
// (e) Three questions, each needing the answer before it: three rounds. Answers arrive one
// round at a time, so the earlier ones ride in the sealed state. (No inputSchema, so the
// handler gets only the context.)

async function order(ctx) {
    const state = ctx.mcpReq.requestState();
    switch (state?.step) {
        case 'name': {
            const name = accepted(ctx, 'name', 'name', 'string');
            if (name === undefined) break;
            return inputRequired({
                inputRequests: { color: ask(`${name}, your favourite colour?`, 'color') },
                requestState: await stateCodec.mint({ step: 'color', name })
            });
        }
        case 'color': {
            const color = accepted(ctx, 'color', 'color', 'string');
            if (color === undefined) break;
            return inputRequired({
                inputRequests: { size: ask(`How big, in ${color}?`, 'size', 'integer') },
                requestState: await stateCodec.mint({ step: 'size', name: state.name, color })
            });
        }
        case 'size': {
            const size = accepted(ctx, 'size', 'size', 'number');
            if (size === undefined) break;
            return text(`${state.name} ordered size ${size} in ${state.color}.`);
        }
    }
    if (state !== undefined) return { ...text('the order was not completed'), isError: true };
    return inputRequired({
        inputRequests: { name: ask('Your name?', 'name') },
        requestState: await stateCodec.mint({ step: 'name' })
    });
}

/** Out-of-band errors the SDK reports (refused requests, dropped messages) go to stderr. */
function report(error) {
    console.error(`interop server: ${error?.stack ?? error}`);
}

function buildServer() {
    const server = new McpServer(
        { name: 'interop', version: '0.1.0' },
        { requestState: { verify: stateCodec.verify } }
    );
    server.registerTool(
        'delete_folder',
        {
            description: 'Delete a folder, asking for confirmation when it is not empty.',
            inputSchema: z.object({ path: z.string().describe('The folder to delete.') })
        },
        deleteFolder
    );
    server.registerTool(
        'plan_trip',
        { description: 'Plan a day trip and say where it is saved.', inputSchema: z.object({ city: z.string() }) },
        planTrip
    );
    server.registerTool(
        'provision',
        {
            description: 'Provision a database. Asks which region to put it in.',
            inputSchema: z.object({ name: z.string() })
        },
        provision
    );
    server.registerTool('order', { description: 'Order something, after three questions.' }, order);
    server.registerPrompt('briefing', { description: 'Draft a briefing tuned to its audience.' }, briefing);
    server.server.onerror = report;
    server.registerResource(
        'vault',
        new ResourceTemplate('vault://{item}', { list: undefined }),
        { description: 'Secrets, after confirmation.', mimeType: 'text/plain' },
        vault
    );
    return server;
}

// ---------------------------------------------------------------------------------------------
// Serving.

function serveHttp(port) {
    const modern = toNodeHandler(createMcpHandler(() => buildServer(), { legacy: 'reject', onerror: report }));
    /** Legacy sessions by Mcp-Session-Id, each with its own server instance. */
    const sessions = new Map();

    async function legacy(req, res, body) {
        const sid = req.headers['mcp-session-id'];
        const session = typeof sid === 'string' ? sessions.get(sid) : undefined;
        if (session) return session.handleRequest(req, res, body);
        if (sid === undefined && req.method === 'POST' && isInitializeRequest(body)) {
            const transport = new NodeStreamableHTTPServerTransport({
                sessionIdGenerator: () => randomUUID(),
                onsessioninitialized: id => sessions.set(id, transport)
            });
            transport.onclose = () => transport.sessionId && sessions.delete(transport.sessionId);
            await buildServer().connect(transport);
            return transport.handleRequest(req, res, body);
        }
        const [status, code, message] = sid === undefined ? [400, -32600, 'Bad Request: Mcp-Session-Id required'] : [404, -32001, 'Session not found'];
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null }));
    }

    const server = createServer(async (req, res) => {
        try {
            const url = new URL(req.url ?? '/', 'http://127.0.0.1');
            if (url.pathname !== '/mcp') {
                res.writeHead(404).end('not found');
                return;
            }
            if (req.method !== 'POST') {
                await legacy(req, res, undefined);
                return;
            }
            const probe = await toWebRequest(req);
            const raw = await probe.clone().text();
            let body;
            try {
                body = JSON.parse(raw);
            } catch {
                body = undefined;
            }
            if (body !== undefined && (await isLegacyRequest(probe))) {
                await legacy(req, res, body);
            } else {
                await modern(req, res, body ?? raw);
            }
        } catch (error) {
            console.error('interop server:', error);
            if (!res.headersSent) res.writeHead(500);
            res.end();
        }
    });
    server.listen(port, '127.0.0.1', () => {
        console.error(`interop server listening on http://127.0.0.1:${port}/mcp`);
    });
}

function main() {
    const args = process.argv.slice(2);
    const http = args.indexOf('--http');
    if (http >= 0) {
        const port = Number(args[http + 1]);
        if (!Number.isInteger(port) || port <= 0 || port > 65535) {
            console.error('usage: node interop_server.mjs [--stdio | --http PORT]');
            process.exit(2);
        }
        serveHttp(port);
    } else {
        serveStdio(() => buildServer(), { onerror: report });
    }
}

main();
