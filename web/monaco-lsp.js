// Monaco on top of a LeaseClient: documents kept in sync, diagnostics as markers, and the hover,
// definition and completion providers the server advertises (K2.1, K2.5, K2.6). LSP positions are
// UTF-16 code units, as Monaco's columns are (the page offers only utf-16).

export const MARKER_OWNER = 'kandev-lsp';

// LSP's CompletionItemKind, in its order (1-based), by the names Monaco's enum also uses.
const COMPLETION_KINDS = ['Text', 'Method', 'Function', 'Constructor', 'Field', 'Variable', 'Class',
  'Interface', 'Module', 'Property', 'Unit', 'Value', 'Enum', 'Keyword', 'Snippet', 'Color', 'File',
  'Reference', 'Folder', 'EnumMember', 'Constant', 'Struct', 'Event', 'Operator', 'TypeParameter'];

/** The text-document capabilities of the page, for `initialize`. */
export const TEXT_DOCUMENT_CAPABILITIES = {
  synchronization: { dynamicRegistration: false, didSave: false, willSave: false },
  publishDiagnostics: { versionSupport: true, relatedInformation: false, tagSupport: { valueSet: [1, 2] } },
  hover: { contentFormat: ['markdown', 'plaintext'] },
  definition: { linkSupport: true },
  completion: {
    contextSupport: true,
    completionItem: { snippetSupport: true, insertReplaceSupport: true,
      documentationFormat: ['markdown', 'plaintext'] },
  },
};

export function toRange(monaco, range) {
  return new monaco.Range(range.start.line + 1, range.start.character + 1,
    range.end.line + 1, range.end.character + 1);
}

function toPosition(position) {
  return { line: position.lineNumber - 1, character: position.column - 1 };
}

/** LSP diagnostics as Monaco marker data. */
export function toMarkers(monaco, diagnostics) {
  const severities = [null, monaco.MarkerSeverity.Error, monaco.MarkerSeverity.Warning,
    monaco.MarkerSeverity.Info, monaco.MarkerSeverity.Hint];
  return diagnostics.map((diagnostic) => ({
    ...toRange(monaco, diagnostic.range),
    severity: severities[diagnostic.severity] ?? monaco.MarkerSeverity.Error,
    message: diagnostic.message,
    source: diagnostic.source,
    code: typeof diagnostic.code === 'object' ? String(diagnostic.code?.value) : diagnostic.code?.toString(),
    tags: (diagnostic.tags ?? []).map((tag) => (tag === 1 ? monaco.MarkerTag.Unnecessary
      : monaco.MarkerTag.Deprecated)),
  }));
}

function markdown(contents) {
  // MarkupContent, a MarkedString, or a list of MarkedStrings.
  if (Array.isArray(contents)) return contents.flatMap(markdown);
  if (typeof contents === 'string') return contents ? [{ value: contents }] : [];
  if (contents && 'language' in contents) return [{ value: `\`\`\`${contents.language}\n${contents.value}\n\`\`\`` }];
  if (contents?.kind === 'plaintext') return [{ value: contents.value.replace(/[\\`*_{}[\]()#+\-.!<>]/g, '\\$&') }];
  return contents?.value ? [{ value: contents.value }] : [];
}

/**
 * The page's open documents: one Monaco model per LSP uri. Versions are the model's own version ids
 * (what this attachment sent); a diagnostics publication for another version is stale and dropped, the
 * rule most LSP clients apply (issue 18 item 5).
 */
export class Documents {
  constructor(monaco, lsp, languageId) {
    this.monaco = monaco;
    this.lsp = lsp;
    this.languageId = languageId;
    this.models = new Map();
    this.open = false;
  }

  add(uri, model) {
    this.models.set(uri, model);
    model.onDidChangeContent(() => {
      if (!this.open) return;  // reopened with the current text on the next attachment
      this.lsp.notify('textDocument/didChange', {
        textDocument: { uri, version: model.getVersionId() },
        contentChanges: [{ text: model.getValue() }],
      });
    });
  }

  uriOf(model) {
    for (const [uri, candidate] of this.models) if (candidate === model) return uri;
    return null;
  }

  /** Reopen every document with its current text (K17.5). */
  reopen() {
    for (const [uri, model] of this.models) {
      this.lsp.notify('textDocument/didOpen', {
        textDocument: { uri, languageId: this.languageId, version: model.getVersionId(), text: model.getValue() },
      });
    }
    this.open = true;
  }

  /** The attachment ended: the broker closed the documents at the server; no stale markers stay. */
  detached() {
    this.open = false;
    for (const model of this.models.values()) this.monaco.editor.setModelMarkers(model, MARKER_OWNER, []);
  }

  publish({ uri, version, diagnostics }) {
    const model = this.models.get(uri);
    if (!model || !this.open) return false;
    if (typeof version === 'number' && version !== model.getVersionId()) return false;
    this.monaco.editor.setModelMarkers(model, MARKER_OWNER, toMarkers(this.monaco, diagnostics));
    return true;
  }
}

/**
 * The server capabilities this page registers Monaco providers for (registerProviders), with the mode
 * key of Monaco's own TypeScript worker feature each one replaces.
 */
const PROVIDED_MODES = {
  hoverProvider: 'hovers',
  definitionProvider: 'definitions',
  completionProvider: 'completionItems',
};

/**
 * Monaco's own language features that the attached server makes redundant, turned off (K2.3): for
 * TypeScript and JavaScript Monaco runs a TypeScript worker of its own, so without this every marker and
 * hover came twice (the worker's and the server's), and completion listed both. A feature this page
 * registers from the server's capabilities (PROVIDED_MODES) replaces the built-in one; diagnostics always
 * do (the server publishes them); every other built-in (references, rename, outline, ...) stays, since
 * this page registers nothing in its place. Other languages have no such built-ins in Monaco's min/vs.
 */
export function suppressBuiltIns(monaco, languageId, capabilities) {
  const defaults = { typescript: 'typescriptDefaults', javascript: 'javascriptDefaults' }[languageId];
  const builtIns = defaults && monaco.languages.typescript?.[defaults];
  if (!builtIns) return;
  const modes = { ...builtIns.modeConfiguration, diagnostics: false };
  for (const [provider, mode] of Object.entries(PROVIDED_MODES)) {
    modes[mode] = !capabilities[provider];  // keep a built-in only where the server has none
  }
  builtIns.setModeConfiguration(modes);
  // The worker's own validation is off too (its options, not the mode, govern it); changing them
  // revalidates, which clears what it had marked before the server attached.
  builtIns.setDiagnosticsOptions({
    ...builtIns.getDiagnosticsOptions(),
    noSemanticValidation: true,
    noSyntaxValidation: true,
    noSuggestionDiagnostics: true,
  });
}

/** Register the providers `capabilities` advertises (PROVIDED_MODES); returns what to dispose on detach. */
export function registerProviders(monaco, languageId, capabilities, lsp, documents) {
  const registered = [];
  const where = (model, position) => ({
    textDocument: { uri: documents.uriOf(model) },
    position: toPosition(position),
  });
  const ask = async (method, params, token) => {
    if (params.textDocument?.uri === null) return null;  // a model that is not one of our documents
    try {
      return await lsp.request(method, params, token);
    } catch (error) {
      if (!token?.isCancellationRequested) console.warn(`kandev-lsp: ${method} failed`, error);
      return null;
    }
  };
  if (capabilities.hoverProvider) {
    registered.push(monaco.languages.registerHoverProvider(languageId, {
      async provideHover(model, position, token) {
        const hover = await ask('textDocument/hover', where(model, position), token);
        if (!hover) return null;
        return { contents: markdown(hover.contents), range: hover.range && toRange(monaco, hover.range) };
      },
    }));
  }
  if (capabilities.definitionProvider) {
    registered.push(monaco.languages.registerDefinitionProvider(languageId, {
      async provideDefinition(model, position, token) {
        const found = await ask('textDocument/definition', where(model, position), token);
        const locations = found === null ? [] : Array.isArray(found) ? found : [found];
        return locations.map((location) => ('targetUri' in location
          ? { uri: monaco.Uri.parse(location.targetUri),
            range: toRange(monaco, location.targetSelectionRange ?? location.targetRange) }
          : { uri: monaco.Uri.parse(location.uri), range: toRange(monaco, location.range) }));
      },
    }));
  }
  const completion = capabilities.completionProvider;
  if (completion) {
    const items = new WeakMap();  // a suggestion -> the server's item, for completionItem/resolve
    registered.push(monaco.languages.registerCompletionItemProvider(languageId, {
      triggerCharacters: completion.triggerCharacters ?? [],
      async provideCompletionItems(model, position, context, token) {
        // Monaco's trigger kinds are LSP's minus one (K2.5); the character only with its kind.
        const lspContext = { triggerKind: context.triggerKind + 1 };
        if (context.triggerCharacter !== undefined && context.triggerKind === 1) {
          lspContext.triggerCharacter = context.triggerCharacter;
        }
        const found = await ask('textDocument/completion',
          { ...where(model, position), context: lspContext }, token);
        if (!found) return { suggestions: [] };
        const list = Array.isArray(found) ? { items: found, isIncomplete: false } : found;
        const word = model.getWordUntilPosition(position);
        // An item without a textEdit replaces the current word (K2.6).
        const wordRange = new monaco.Range(position.lineNumber, word.startColumn, position.lineNumber, word.endColumn);
        const editRange = list.itemDefaults?.editRange;
        const defaultRange = !editRange ? wordRange : 'insert' in editRange
          ? { insert: toRange(monaco, editRange.insert), replace: toRange(monaco, editRange.replace) }
          : toRange(monaco, editRange);
        const suggestions = list.items.map((item) => {
          const suggestion = toSuggestion(monaco, item, defaultRange);
          items.set(suggestion, item);
          return suggestion;
        });
        return { suggestions, incomplete: Boolean(list.isIncomplete) };
      },
      async resolveCompletionItem(suggestion, token) {
        const item = items.get(suggestion);
        if (!completion.resolveProvider || !item) return suggestion;
        const resolved = await ask('completionItem/resolve', item, token);
        if (!resolved) return suggestion;
        if (resolved.detail) suggestion.detail = resolved.detail;
        if (resolved.documentation) suggestion.documentation = markdown(resolved.documentation)[0];
        return suggestion;
      },
    }));
  }
  return registered;
}

function toSuggestion(monaco, item, defaultRange) {
  const edit = item.textEdit;
  // An explicit TextEdit or InsertReplaceEdit stays authoritative (K2.6).
  const range = !edit ? defaultRange : 'insert' in edit
    ? { insert: toRange(monaco, edit.insert), replace: toRange(monaco, edit.replace) }
    : toRange(monaco, edit.range);
  const kind = monaco.languages.CompletionItemKind[COMPLETION_KINDS[(item.kind ?? 1) - 1]]
    ?? monaco.languages.CompletionItemKind.Text;
  return {
    label: item.labelDetails ? { label: item.label, detail: item.labelDetails.detail,
      description: item.labelDetails.description } : item.label,
    kind,
    detail: item.detail,
    documentation: item.documentation ? markdown(item.documentation)[0] : undefined,
    sortText: item.sortText,
    filterText: item.filterText,
    preselect: item.preselect,
    insertText: edit ? edit.newText : (item.insertText ?? item.label),
    insertTextRules: item.insertTextFormat === 2
      ? monaco.languages.CompletionItemInsertTextRule.InsertAsSnippet : undefined,
    range,
    additionalTextEdits: item.additionalTextEdits?.map((extra) => ({
      range: toRange(monaco, extra.range), text: extra.newText,
    })),
  };
}
