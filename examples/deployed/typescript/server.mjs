// The deployed base's TypeScript server: examples/interop_server.rs's tools, prompt and resource,
// with the same names, questions, schemas and texts, written with the TypeScript SDK v1
// (`@modelcontextprotocol/sdk` 1.32.2), the line most TypeScript MCP servers in the wild are
// built on, in the shape its README gives: `McpServer`, and over HTTP one stateful
// `StreamableHTTPServerTransport` per session, kept in a map by session id.
//
//     node server.mjs [--stdio | --http PORT]
//
// It speaks 2025-11-25 only and asks its questions live, mid-call. It knows nothing of
// `server/discover`: over HTTP a 2026-07-28 probe is answered 400 "Bad Request: No valid session
// ID provided" (JSON-RPC error, id null), which a client must read as "a legacy server: fall
// back to initialize".

import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';

import { McpServer, ResourceTemplate } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import {
    CreateMessageResultSchema,
    ElicitResultSchema,
    ListRootsResultSchema,
    isInitializeRequest,
} from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';

const FOLDERS = { '/tmp/empty': [], '/tmp/project': ['main.py', 'README.md'] };

const text = (t) => ({ content: [{ type: 'text', text: t }] });

/** Asks a form question on the request's own stream and returns the answer. */
function ask(extra, message, properties) {
    const requestedSchema = { type: 'object', properties, required: Object.keys(properties) };
    return extra.sendRequest(
        { method: 'elicitation/create', params: { message, requestedSchema } },
        ElicitResultSchema,
    );
}

/** The accepted content of an answer, or an error naming what the user did instead. */
function accepted(answer) {
    if (answer.action !== 'accept' || !answer.content) {
        throw new Error(`elicitation was ${answer.action}`);
    }
    return answer.content;
}

function build() {
    const server = new McpServer({ name: 'interop-deployed-typescript', version: '1.0.0' });

    server.registerTool(
        'delete_folder',
        {
            description: 'Delete a folder, asking for confirmation when it is not empty.',
            inputSchema: { path: z.string() },
        },
        async ({ path }, extra) => {
            const count = (FOLDERS[path] ?? []).length;
            if (count === 0) return text(`deleted ${path}`);
            const answer = await ask(extra, `${path} has ${count} file(s). Delete anyway?`, {
                ok: { type: 'boolean' },
            });
            switch (answer.action) {
                case 'accept':
                    return text(answer.content?.ok === true ? `deleted ${path}` : 'kept the folder');
                case 'decline':
                    return text('declined: folder not deleted');
                default:
                    return text('cancelled: folder not deleted');
            }
        },
    );

    server.registerTool(
        'plan_trip',
        { description: 'Plan a day trip and say where it is saved.', inputSchema: { city: z.string() } },
        async ({ city }, extra) => {
            const plan = await extra.sendRequest(
                {
                    method: 'sampling/createMessage',
                    params: {
                        messages: [{ role: 'user', content: { type: 'text', text: `Plan a day in ${city}` } }],
                        maxTokens: 100,
                    },
                },
                CreateMessageResultSchema,
            );
            const roots = await extra.sendRequest({ method: 'roots/list' }, ListRootsResultSchema);
            if (plan.content.type !== 'text') throw new Error('the model did not answer with text');
            if (roots.roots.length === 0) throw new Error('the client has no roots');
            return text(`${plan.content.text} (saved to ${roots.roots[0].uri})`);
        },
    );

    server.registerPrompt('briefing', { description: 'Draft a briefing tuned to its audience.' }, async (extra) => {
        const { audience } = accepted(await ask(extra, 'Who is the briefing for?', { audience: { type: 'string' } }));
        return {
            messages: [{ role: 'user', content: { type: 'text', text: `Write a briefing for ${audience}.` } }],
        };
    });

    server.registerResource(
        'vault',
        new ResourceTemplate('vault://{item}', { list: undefined }),
        { description: 'Secrets, after confirmation.', mimeType: 'text/plain' },
        async (uri, { item }, extra) => {
            const { ok } = accepted(await ask(extra, `Unlock ${item}?`, { ok: { type: 'boolean' } }));
            const body = ok === true ? `the ${item} secret` : 'locked';
            return { contents: [{ uri: uri.href, mimeType: 'text/plain', text: body }] };
        },
    );

    server.registerTool(
        'provision',
        { description: 'Provision a database. Asks which region to put it in.', inputSchema: { name: z.string() } },
        async ({ name }, extra) => {
            const { region } = accepted(
                await ask(extra, 'Which region should the database live in?', { region: { type: 'string' } }),
            );
            return text(`Provisioned '${name}' in ${region}.`);
        },
    );

    server.registerTool('order', { description: 'Order something, after three questions.' }, async (extra) => {
        const { name } = accepted(await ask(extra, 'Your name?', { name: { type: 'string' } }));
        const { color } = accepted(await ask(extra, `${name}, your favourite colour?`, { color: { type: 'string' } }));
        const { size } = accepted(await ask(extra, `How big, in ${color}?`, { size: { type: 'integer' } }));
        return text(`${name} ordered size ${size} in ${color}.`);
    });

    return server;
}

/** Reads a request's JSON body (at most 4 MiB). */
function readBody(req) {
    return new Promise((resolve, reject) => {
        const chunks = [];
        let size = 0;
        req.on('data', (chunk) => {
            size += chunk.length;
            if (size > 4 << 20) {
                reject(new Error('body too large'));
                req.destroy();
            } else {
                chunks.push(chunk);
            }
        });
        req.on('end', () => {
            const raw = Buffer.concat(chunks).toString('utf8');
            try {
                resolve(raw ? JSON.parse(raw) : undefined);
            } catch (e) {
                reject(e);
            }
        });
        req.on('error', reject);
    });
}

function refuse(res, status, message) {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message }, id: null }));
}

async function serveHttp(port) {
    const transports = new Map();
    const http = createServer(async (req, res) => {
        try {
            if (new URL(req.url, 'http://localhost').pathname !== '/mcp') {
                res.writeHead(404).end();
                return;
            }
            const sessionId = req.headers['mcp-session-id'];
            if (req.method === 'POST') {
                const body = await readBody(req);
                let transport = sessionId ? transports.get(sessionId) : undefined;
                if (!transport) {
                    if (sessionId || !isInitializeRequest(body)) {
                        refuse(res, 400, 'Bad Request: No valid session ID provided');
                        return;
                    }
                    transport = new StreamableHTTPServerTransport({
                        sessionIdGenerator: () => randomUUID(),
                        onsessioninitialized: (id) => transports.set(id, transport),
                    });
                    transport.onclose = () => {
                        if (transport.sessionId) transports.delete(transport.sessionId);
                    };
                    await build().connect(transport);
                }
                await transport.handleRequest(req, res, body);
                return;
            }
            const transport = sessionId ? transports.get(sessionId) : undefined;
            if (!transport) {
                res.writeHead(400).end('Invalid or missing session ID');
                return;
            }
            await transport.handleRequest(req, res);
        } catch (e) {
            if (!res.headersSent) refuse(res, 500, `Internal server error: ${e.message}`);
        }
    });
    http.listen(port, '127.0.0.1', () => console.error(`listening on http://127.0.0.1:${port}/mcp`));
}

const args = process.argv.slice(2);
if (args[0] === '--http') {
    await serveHttp(Number(args[1]));
} else {
    await build().connect(new StdioServerTransport());
}
