// The TypeScript SDK's MCP client (npm @modelcontextprotocol/sdk, pinned in package.json), with
// its own OAuth client, as a desktop client built on it connects: e2e/agents_typescript_test.go runs
// it with the system node as `node ts-client.mjs MCP_URL` and drives it over stdin and stdout,
// one JSON object a line.
//
// It signs in as the SDK does it: StreamableHTTPClientTransport with an OAuthClientProvider,
// whose auth() discovers the server from its 401, registers (DCR), and sends the user's browser
// to the authorization URL with PKCE; redirectToAuthorization prints that URL for the test,
// which drives the consent page in Chromium; the browser comes back to this script's loopback
// callback, whose code finishAuth exchanges. Then it connects again, and answers commands:
//
//	{"op":"list"}                            → {"event":"tools","tools":[{name,annotations}]}
//	{"op":"call","name":N,"arguments":{…}}   → {"event":"result","isError":…,"text":…}
//	                                            or {"event":"error","message":…}
//	{"op":"reconnect"}                       → a new connection with the tokens it holds:
//	                                            {"event":"connected",…} or {"event":"error",…}
//	{"op":"quit"}                            → exits
//
// Unasked, it prints {"event":"authorize","url":…} whenever the SDK sends the browser to sign in,
// {"event":"connected","server":…} once connected, and {"event":"list_changed","tools":[…]} with
// the tools listed again whenever the server sends notifications/tools/list_changed (its
// ToolListChangedNotificationSchema handler).
import { createServer } from 'node:http';
import { createInterface } from 'node:readline';
import { randomBytes } from 'node:crypto';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';

const serverUrl = new URL(process.argv[2]);
const say = (obj) => process.stdout.write(JSON.stringify(obj) + '\n');

// The loopback callback the browser comes back to; each answer is handed to whoever waits.
let waiting = null;
const answers = [];
const callback = createServer((req, res) => {
  const u = new URL(req.url, 'http://127.0.0.1');
  if (u.pathname !== '/callback') {
    res.writeHead(404).end();
    return;
  }
  res.writeHead(200, { 'Content-Type': 'text/html' });
  res.end('<!doctype html><title>Back at the TypeScript client</title><p>Signed in.</p>');
  answers.push(u.searchParams);
  if (waiting) waiting();
});
await new Promise((resolve) => callback.listen(0, '127.0.0.1', resolve));
const redirectUrl = `http://127.0.0.1:${callback.address().port}/callback`;

function nextAnswer() {
  if (answers.length > 0) return Promise.resolve(answers.shift());
  return new Promise((resolve) => {
    waiting = () => {
      waiting = null;
      resolve(answers.shift());
    };
  });
}

// An in-memory OAuthClientProvider, as the SDK's examples keep one.
class Provider {
  constructor() {
    this.info = undefined;
    this.saved = undefined;
    this.verifier = undefined;
    this.sentState = undefined;
  }
  get redirectUrl() { return redirectUrl; }
  get clientMetadata() {
    return {
      client_name: 'TypeScript SDK client',
      redirect_uris: [redirectUrl],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
  }
  state() {
    this.sentState = randomBytes(16).toString('hex');
    return this.sentState;
  }
  clientInformation() { return this.info; }
  saveClientInformation(info) { this.info = info; }
  tokens() { return this.saved; }
  saveTokens(tokens) { this.saved = tokens; }
  redirectToAuthorization(url) { say({ event: 'authorize', url: url.toString() }); }
  saveCodeVerifier(v) { this.verifier = v; }
  codeVerifier() { return this.verifier; }
  // What the SDK forgets when the server refuses it (a revoked refresh token: 'tokens').
  invalidateCredentials(scope) {
    if (scope === 'all' || scope === 'client') this.info = undefined;
    if (scope === 'all' || scope === 'tokens') this.saved = undefined;
    if (scope === 'all' || scope === 'verifier') this.verifier = undefined;
  }
}

const provider = new Provider();

function newTransport() {
  return new StreamableHTTPClientTransport(serverUrl, { authProvider: provider });
}

// connect connects a new client; signIn says whether a 401 may send the browser to sign in and
// wait for its answer (only the first connection does: afterwards the user is not there).
async function connect(signIn) {
  const client = new Client({ name: 'ts-sdk-client', version: '1.0.0' }, { capabilities: {} });
  client.setNotificationHandler(ToolListChangedNotificationSchema, async () => {
    try {
      const { tools } = await client.listTools();
      say({ event: 'list_changed', tools: tools.map((t) => t.name) });
    } catch (e) {
      say({ event: 'list_changed', error: String(e) });
    }
  });
  let transport = newTransport();
  try {
    await client.connect(transport);
    return client;
  } catch (e) {
    if (!(e instanceof UnauthorizedError) || !signIn) throw e;
  }
  // The SDK sent the browser to sign in; its answer comes back to the callback.
  const q = await nextAnswer();
  if (q.get('state') !== provider.sentState) throw new Error('the callback came with another state');
  if (!q.get('code')) throw new Error('the authorization server answered ' + q.get('error'));
  await transport.finishAuth(q.get('code'));
  transport = newTransport();
  await client.connect(transport);
  return client;
}

let client = await connect(true);
say({ event: 'connected', server: client.getServerVersion()?.name });

const lines = createInterface({ input: process.stdin });
for await (const line of lines) {
  const cmd = JSON.parse(line);
  try {
    if (cmd.op === 'quit') break;
    if (cmd.op === 'reconnect') {
      await client.close().catch(() => {});
      client = await connect(false);
      say({ event: 'connected', server: client.getServerVersion()?.name });
    } else if (cmd.op === 'list') {
      const { tools } = await client.listTools();
      say({ event: 'tools', tools: tools.map((t) => ({ name: t.name, annotations: t.annotations ?? {} })) });
    } else if (cmd.op === 'call') {
      const res = await client.callTool({ name: cmd.name, arguments: cmd.arguments ?? {} });
      const text = (res.content ?? []).filter((c) => c.type === 'text').map((c) => c.text).join('\n');
      say({ event: 'result', isError: res.isError === true, text });
    }
  } catch (e) {
    say({ event: 'error', message: String(e && e.message ? e.message : e), unauthorized: e instanceof UnauthorizedError });
  }
}
await client.close().catch(() => {});
callback.close();
process.exit(0);
