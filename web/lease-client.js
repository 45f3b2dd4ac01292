// The lease protocol of `kandev-lsp broker` for one (session, language), as docs/broker-contract.md
// states it, with no editor in it: the page credential, the ready frame, the lease hint, initialize only
// on a new server, attachment-ready, JSON-RPC both ways, Stop and its ack, and the reconnect policy
// (K12.12, K16.1, K17.4-K17.5, K18.4). monaco-lsp.js puts an editor on top; app.js wires both to a page.

/** The subprotocol the broker selects; the ticket rides in a second, never selected, value. */
export const SUBPROTOCOL = 'kandev-lsp.v1';
const TICKET_PROTOCOL_PREFIX = 'kandev-lsp.ticket.';

/** Automatic reconnects after a retryable loss, then a Retry button (K18.4). */
export const RECONNECT_DELAYS_MS = [500, 1000, 2000, 4000, 8000];

const FINAL = {
  1008: ['error', 'the broker refused a frame of this page (policy violation)'],
  1009: ['error', 'a message was too big for the broker'],
  4001: ['unavailable', 'the language server is not installed on the task host'],
  4002: ['unavailable', 'the session is unavailable'],
  4003: ['error', 'installing the language server failed'],
  4004: ['unavailable', 'the task host\'s executor is not supported'],
  4005: ['unavailable', 'too many language servers are running'],
  4006: ['error', 'the language server exited'],
  4007: ['unavailable', 'no language server and no installer on the task host'],
  4008: ['error', 'the language server failed to start'],
  4400: ['refused', 'the broker refused the request (bad request)'],
  4401: ['refused', 'the broker refused this page\'s credential'],
  4403: ['refused', 'the broker does not accept pages from this origin'],
  4404: ['refused', 'the broker has no such route'],
};
// A refusal of the page itself: retrying cannot help and no Retry is offered (the embedder must act).
const REFUSALS = new Set([4400, 4401, 4403, 4404]);

/**
 * What a close means to the page, as a pure decision: `retry` when an automatic reconnect may help (the
 * network, the broker restarting, a broken task-host connection: 1001, 1005, 1006, 1011-1014, 4009), else
 * the state to stay in. Everything else is final; a code nobody documented is final too, so a page never
 * loops on something it does not understand.
 */
export function closeOutcome(code) {
  if ([1001, 1005, 1006, 1011, 1012, 1013, 1014, 4009].includes(code)) {
    return { retry: true, state: 'reconnecting', message: 'the connection was lost' };
  }
  const [state, message] = FINAL[code] ?? ['error', 'the connection closed'];
  return { retry: false, state, message, offerRetry: !REFUSALS.has(code) };
}

/** A value kept per tab, per session and language, across reloads (sessionStorage, K12.12). */
export class TabValue {
  constructor(name, sessionId, language) { this.key = `kandev-lsp.${name}:${sessionId}:${language}`; }
  get() { return sessionStorage.getItem(this.key); }
  set(value) { sessionStorage.setItem(this.key, value); }
  clear() { sessionStorage.removeItem(this.key); }
}

/** Work-done progress as the server reported it (K5.6, K5.7, K5.10): the oldest item first. */
export class ProgressView {
  constructor() { this.active = new Map(); this.seenAny = false; this.lastEnded = null; }
  reset(snapshot) {
    this.active.clear();
    const now = Date.now();
    for (const item of snapshot?.active ?? []) {
      this.active.set(String(item.token), { ...item, startedAt: now - (item.elapsedMs ?? 0) });
    }
    this.seenAny = Boolean(snapshot?.seenAny);
    this.lastEnded = snapshot?.lastEnded ?? null;
  }
  /** Apply one `$/progress`; malformed or unknown tokens are ignored. */
  apply(params) {
    const value = params?.value;
    if (params?.token === undefined || typeof value !== 'object' || value === null) return;
    const token = String(params.token);
    if (value.kind === 'begin') {
      this.active.delete(token);
      this.active.set(token, { token, title: value.title, message: value.message,
        percentage: value.percentage, startedAt: Date.now() });
      this.seenAny = true;
    } else if (value.kind === 'report' && this.active.has(token)) {
      const item = this.active.get(token);
      if (value.message !== undefined) item.message = value.message;
      if (value.percentage !== undefined) item.percentage = value.percentage;
    } else if (value.kind === 'end' && this.active.has(token)) {
      const { title } = this.active.get(token);
      this.active.delete(token);
      this.lastEnded = { token, title, message: value.message };
    }
  }
}

/**
 * One lease of the broker, across reconnects. `options`:
 * - `brokerUrl` (`ws://host:port`), `sessionId`, `language`, `autoInstall`;
 * - `fetchTicket()`: a fresh single-use ticket from the embedder's backend (one per connection attempt);
 * - `initializeParams(ready)`: the client's `initialize` params for a new server;
 * - `onAttach({capabilities, ready})`: reopen documents and register providers (before attachment-ready);
 * - `onDetach()`: forget markers and providers (the broker cleared the server's documents);
 * - `onNotification(message)`, `onServerRequest(message)` (may return a result), `onState(state, text)`.
 */
export class LeaseClient {
  constructor(options) {
    this.options = options;
    this.hint = new TabValue('lease', options.sessionId, options.language);
    this.progress = new ProgressView();
    this.state = 'off';
    this.attempt = 0;
    this.ws = null;
    this.ready = null;
    this.capabilities = null;
    this.closes = [];  // every close this page saw, for the console (and the reference test)
    this._nextId = 1;
    this._pending = new Map();
    this._acks = new Map();
    this._stopping = false;
    this._stopAck = null;
    this._timer = null;
    this._connecting = false;  // from a connect's start until its socket opens or the attempt fails
    this._opening = null;  // settles with that: what a Stop waits for when the tab is not connected
    this._initializeOutcome = null;
    this._failure = null;
  }

  /** Connect (or reconnect) now, resuming the tab's lease when its hint still names one. */
  start() {
    clearTimeout(this._timer);
    this.attempt = 0;
    this._stopping = false;
    this._stopAck = null;
    this._connect();
  }

  /**
   * Stop the server: the acknowledged `stop` control frame (K16.1). Resolves with the ack. A tab that is
   * not connected right now (reconnecting after a loss, or still connecting) may have a lease the broker
   * keeps running detached: it connects with its hint to stop it, and reports stopped only on the ack.
   * Only a tab with no socket and no lease hint has nothing running to stop.
   */
  async stop() {
    clearTimeout(this._timer);
    if (!this.ws && !this._connecting && !this.hint.get()) {
      this._setState('off', 'stopped');
      return null;
    }
    this._stopping = true;
    this._setState('stopping', 'stopping the language server');
    if (!this.ws && !this._connecting) this._connect();
    if (this.ws?.readyState !== WebSocket.OPEN) await this._opening;  // rejected: the close says why
    const ack = await this.control('stop');
    this.hint.clear();  // the lease is gone: the next start is a fresh server
    this._stopAck = ack;
    return ack;
  }

  /** Send a JSON-RPC request; resolves with its result, rejects with its error or on detach. */
  request(method, params, cancellation) {
    const id = this._nextId++;
    const answer = new Promise((resolve, reject) => this._pending.set(id, { resolve, reject, method }));
    this._send({ jsonrpc: '2.0', id, method, params });
    cancellation?.onCancellationRequested?.(() => {
      if (this._pending.has(id)) this.notify('$/cancelRequest', { id });
    });
    return answer;
  }

  notify(method, params) { this._send({ jsonrpc: '2.0', method, params }); }

  /** Send a control frame; resolves with an ok ack, rejects with a refusal or on close. */
  control(name, extra = {}) {
    const id = `${name}-${this._nextId++}`;
    const ack = new Promise((resolve, reject) => this._acks.set(id, { resolve, reject }));
    this._send({ control: name, id, ...extra });
    return ack;
  }

  // --- the connection -----------------------------------------------------------------------------

  async _connect() {
    const { brokerUrl, sessionId, language, autoInstall } = this.options;
    // A reconnect keeps the state _lost set: it says what was lost and why until the attempt succeeds.
    if (!this.attempt && !this._stopping) this._setState('connecting', 'connecting');
    let opened;
    let failed;
    this._connecting = true;
    this._opening = new Promise((resolve, reject) => { opened = resolve; failed = reject; });
    this._opening.catch(() => {});  // only a Stop waits for it, and the close reports the failure
    let ticket;
    try {
      ticket = await this.options.fetchTicket();
    } catch (error) {
      this._connecting = false;
      failed(new Error(`no ticket from the backend: ${error.message}`));
      this._lost(1006, `no ticket from the backend: ${error.message}`);
      return;
    }
    const url = new URL(`/lsp/${encodeURIComponent(sessionId)}`, brokerUrl);
    url.searchParams.set('language', language);
    const hint = this.hint.get();
    if (hint) url.searchParams.set('lease', hint);
    if (autoInstall) url.searchParams.set('autoInstall', '1');
    const ws = new WebSocket(url, [SUBPROTOCOL, TICKET_PROTOCOL_PREFIX + ticket]);
    this.ws = ws;
    this.ready = null;
    let installError = null;
    ws.onopen = () => {
      opened();
      if (this.ws === ws) this._connecting = false;
    };
    ws.onmessage = (event) => {
      let frame;
      try {
        frame = JSON.parse(event.data);
      } catch {
        return;
      }
      if ('jsonrpc' in frame) {
        this._rpc(frame);
      } else if ('ack' in frame) {
        this._ack(frame);
      } else if (this._stopping) {
        // connected to stop (or stopping): no install progress, no ready to act on, the ack decides
      } else if (frame.status === 'installing') {
        this._setState('installing', `installing the ${language} language server`);
      } else if (frame.status === 'installed') {
        this._setState('starting', 'starting the language server');
      } else if (frame.status === 'install_failed') {
        installError = frame.error;
      } else if (frame.status === 'ready' && this.ready === null) {
        this._attach(frame).catch((error) => this._abort(ws, error));
      } else if (frame.status === 'initialized' || frame.status === 'initialize_failed') {
        this._initializeOutcome?.(frame);
      }
    };
    ws.onclose = (event) => {
      failed(new Error(`the connection closed (${event.code})`));  // nothing, once it had opened
      if (this.ws !== ws) return;
      this._connecting = false;
      this.ws = null;
      this.closes.push({ code: event.code, reason: event.reason });
      this._detached();
      if (this._failure) {
        this._setState('error', this._failure, true);
        this._failure = null;
        return;
      }
      if (this._stopping && this._stopAck) {
        this._setState('off', this._stopAck.confirmed === false ? 'stopped (cleanup not confirmed)' : 'stopped');
        return;
      }
      this._lost(event.code, event.code === 4003 && installError ? installError : event.reason);
    };
  }

  async _attach(ready) {
    this.ready = ready;
    this.hint.set(ready.lease);
    this.progress.reset(ready.progress);
    let capabilities = ready.capabilities;
    if (!ready.resumed) {  // a new server: this page initializes it
      this._setState('initializing', 'waiting for the initialize answer');
      const result = await this.request('initialize', this.options.initializeParams(ready));
      capabilities = result?.capabilities ?? {};
      this.notify('initialized', {});
    } else if (ready.initializeError) {
      throw new Error(`the server rejected initialize: ${ready.initializeError.message}`);
    } else if (!capabilities) {
      // Resumed while the lease's initialize is still pending (a reload during a cold start): never a
      // second initialize; the broker sends the outcome in an `initialized` frame once the server answers.
      this._setState('initializing', 'waiting for the initialize answer');
      const outcome = await new Promise((resolve) => { this._initializeOutcome = resolve; });
      this._initializeOutcome = null;
      if (outcome.status === 'initialize_failed') {
        throw new Error(`the server rejected initialize: ${outcome.error?.message}`);
      }
      capabilities = outcome.capabilities ?? {};
    }
    this.capabilities = capabilities;
    await this.options.onAttach({ capabilities, ready });
    await this.control('attachment-ready');
    this.attempt = 0;
    this._setState('ready', ready.resumed ? 'ready (resumed)' : 'ready');
  }

  /** Attaching failed (the server rejected initialize): say why (its message, kept as it is) and close. */
  _abort(ws, error) {
    if (this.ws !== ws) return;  // that connection is already gone
    this._failure = error.message;
    ws.close(1000);
  }

  _detached() {
    for (const { reject, method } of this._pending.values()) reject(new Error(`${method}: disconnected`));
    this._pending.clear();
    for (const { reject } of this._acks.values()) reject(new Error('disconnected'));
    this._acks.clear();
    this._initializeOutcome?.({ status: 'initialize_failed', error: { message: 'disconnected' } });
    this.capabilities = null;
    this.options.onDetach();
  }

  _lost(code, reason) {
    const outcome = closeOutcome(code);
    if (this._stopping) {
      this._setState('error', `the connection closed (${code}) before the stop was acknowledged${reason ? `: ${reason}` : ''}`);
      return;
    }
    const why = `${outcome.message} (${code})${reason ? `: ${reason}` : ''}`;
    if (!outcome.retry) {
      this._setState(outcome.state, why, outcome.offerRetry);
      return;
    }
    if (this.attempt >= RECONNECT_DELAYS_MS.length) {
      this._setState('error', `${why}; automatic reconnects failed`, true);
      return;
    }
    const delay = RECONNECT_DELAYS_MS[this.attempt++];
    this._setState('reconnecting', `${why}; reconnecting, attempt ${this.attempt} of ${RECONNECT_DELAYS_MS.length}`);
    this._timer = setTimeout(() => this._connect(), delay);
  }

  // --- messages -----------------------------------------------------------------------------------

  _send(message) {
    if (!this.ws || this.ws.readyState !== WebSocket.OPEN) throw new Error('not connected');
    this.ws.send(JSON.stringify(message));
  }

  _ack(frame) {
    const waiter = this._acks.get(frame.id);
    if (!waiter) return;
    this._acks.delete(frame.id);
    if (frame.ok) waiter.resolve(frame);
    else waiter.reject(new Error(`${frame.ack}: ${frame.error ?? 'refused'}`));
  }

  _rpc(message) {
    if ('method' in message && 'id' in message) {
      this._serverRequest(message);
    } else if ('method' in message) {
      if (message.method === '$/progress') this.progress.apply(message.params);
      this.options.onNotification(message);
    } else {
      const waiter = this._pending.get(message.id);
      if (!waiter) return;
      this._pending.delete(message.id);
      if (message.error) waiter.reject(Object.assign(new Error(message.error.message), message.error));
      else waiter.resolve(message.result);
    }
  }

  async _serverRequest(message) {
    // The broker answers most server requests itself (K14.6); what reaches a page gets an answer too.
    let reply;
    try {
      const result = await this.options.onServerRequest(message);
      reply = { jsonrpc: '2.0', id: message.id, result: result ?? null };
    } catch (error) {
      reply = { jsonrpc: '2.0', id: message.id, error: { code: error.code ?? -32601, message: error.message } };
    }
    if (this.ws && this.ws.readyState === WebSocket.OPEN) this._send(reply);
  }

  _setState(state, text, offerRetry = false) {
    this.state = state;
    this.options.onState(state, text, offerRetry);
  }
}
