// The page: what an embedder replaces. It asks its own backend for the file and the broker's address
// (api/config) and for a ticket per connection (api/ticket: the backend holds the broker token and
// mints a single-use ticket, docs/broker-contract.md), puts the file in a Monaco editor and keeps it
// attached to its language server through a LeaseClient. Stop is remembered for the tab (K4.3).

import { LeaseClient, TabValue } from './lease-client.js';
import {
  Documents, MARKER_OWNER, TEXT_DOCUMENT_CAPABILITIES, registerProviders, suppressBuiltIns,
} from './monaco-lsp.js';

const statusView = document.getElementById('status');
const progressView = document.getElementById('progress');
const powerButton = document.getElementById('power');
const retryButton = document.getElementById('retry');

function loadMonaco() {
  // monaco-editor's prebuilt AMD build, served by the backend under vs/ (no bundler).
  self.MonacoEnvironment = { getWorkerUrl: () => new URL('vs/base/worker/workerMain.js', location.href).href };
  window.require.config({ paths: { vs: new URL('vs', location.href).href } });
  return new Promise((resolve, reject) => window.require(['vs/editor/editor.main'], resolve, reject));
}

async function fetchJson(path, init) {
  const response = await fetch(path, init);
  const body = await response.json().catch(() => ({}));
  if (!response.ok) throw new Error(body.message ?? `${path}: HTTP ${response.status}`);
  return body;
}

const config = await fetchJson('api/config');
await loadMonaco();
const { monaco } = window;

document.getElementById('file').textContent = config.document.path;
const model = monaco.editor.createModel(config.document.text, config.languageId, monaco.Uri.parse(config.document.uri));
const editor = monaco.editor.create(document.getElementById('editor'), {
  model,
  automaticLayout: true,
  wordBasedSuggestions: 'off',  // suggestions come from the language server only
  minimap: { enabled: false },
});

const stopped = new TabValue('stopped', config.sessionId, config.language);
let providers = [];
let initializeTimer = null;

const client = new LeaseClient({
  brokerUrl: config.brokerUrl,
  sessionId: config.sessionId,
  language: config.language,
  autoInstall: config.autoInstall,
  fetchTicket: async () => (await fetchJson('api/ticket', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ sessionId: config.sessionId, language: config.language }),
  })).ticket,
  initializeParams: (ready) => ({
    processId: null,
    clientInfo: { name: 'kandev-lsp reference page' },
    rootUri: ready.workspaceUri,
    workspaceFolders: [{ uri: ready.workspaceUri, name: ready.workspacePath.split('/').pop() || '/' }],
    workDoneToken: `page-initialize-${crypto.randomUUID()}`,
    capabilities: {
      general: { positionEncodings: ['utf-16'] },
      window: { workDoneProgress: true },
      workspace: { configuration: true, workspaceFolders: true },
      textDocument: TEXT_DOCUMENT_CAPABILITIES,
    },
  }),
  onAttach: async ({ capabilities }) => {
    suppressBuiltIns(monaco, config.languageId, capabilities);
    providers = registerProviders(monaco, config.languageId, capabilities, client, documents);
    documents.reopen();
  },
  onDetach: () => {
    for (const provider of providers) provider.dispose();
    providers = [];
    documents.detached();
  },
  onNotification: (message) => {
    if (message.method === 'textDocument/publishDiagnostics') documents.publish(message.params);
    else if (message.method === 'window/showMessage') console.info('server:', message.params?.message);
    else if (message.method === '$/progress') showProgress();
  },
  onServerRequest: (message) => {
    if (message.method === 'window/showMessageRequest') return null;
    if (message.method === 'workspace/applyEdit') return { applied: false };
    if (message.method.startsWith('client/')) return null;  // registrations: the broker applies them
    throw Object.assign(new Error(`${message.method} is not handled by this page`), { code: -32601 });
  },
  onState: (state, text, offerRetry) => {
    statusView.dataset.state = state;
    statusView.textContent = text;
    powerButton.disabled = state === 'stopping';
    powerButton.textContent = ['off', 'refused', 'unavailable', 'error'].includes(state) ? 'Start' : 'Stop';
    retryButton.hidden = !offerRetry;
    clearInterval(initializeTimer);
    if (state === 'initializing') {
      // Locally measured, never presented as server progress (K5.3, K5.4).
      const since = client.ready?.initializeSentAt ?? Date.now();
      initializeTimer = setInterval(() => {
        const seconds = Math.round((Date.now() - since) / 1000);
        statusView.textContent = seconds >= 60
          ? `initializing for ${seconds} s: taking longer than usual`
          : `initializing for ${seconds} s`;
      }, 1000);
    }
    showProgress();
  },
});
const documents = new Documents(monaco, client, config.languageId);
documents.add(config.document.uri, model);

function showProgress() {
  const { active, seenAny } = client.progress;
  const items = [...active.values()];
  if (items.length) {
    const [first] = items;
    const percent = typeof first.percentage === 'number' ? ` ${Math.max(0, Math.min(100, first.percentage))}%` : '';
    const seconds = Math.round((Date.now() - first.startedAt) / 1000);
    const more = items.length > 1 ? ` (+${items.length - 1} more)` : '';
    progressView.textContent = `${first.title ?? 'working'}${first.message ? `: ${first.message}` : ''}${percent}, ${seconds} s${more}; cross-file results may be incomplete`;
  } else {
    progressView.textContent = client.state === 'ready' && !seenAny ? 'the server reported no background analysis' : '';
  }
}

powerButton.addEventListener('click', async () => {
  if (['off', 'refused', 'unavailable', 'error'].includes(client.state)) {
    stopped.clear();
    client.start();
    return;
  }
  stopped.set('1');  // an explicit Stop holds for this tab until Start (K4.3)
  try {
    await client.stop();
  } catch (error) {
    statusView.textContent = `stop failed: ${error.message}`;
  }
});
retryButton.addEventListener('click', () => client.start());

window.kandevLsp = { monaco, editor, model, client, documents, markerOwner: MARKER_OWNER };
if (stopped.get()) {
  statusView.dataset.state = 'off';
  statusView.textContent = 'stopped in this tab; Start to connect';
  powerButton.textContent = 'Start';
  powerButton.disabled = false;
} else {
  client.start();
}
