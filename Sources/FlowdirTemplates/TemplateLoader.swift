import FlowdirCore

/// Everything known after loading a template: the model, the validated
/// graph when it has no errors, every diagnostic, and the text of each file
/// read (to quote lines in messages).
public struct LoadedTemplate: Sendable {
    public var file: String
    public var template: WorkflowTemplate?
    public var graph: WorkflowGraph?
    public var diagnostics: [Diagnostic]
    public var sources: [String: String]
    /// The tool files the load consulted (`ToolCatalog.consulted`).
    public var toolFiles: [ToolFile] = []

    public var isValid: Bool { graph != nil && !diagnostics.hasErrors }

    public init(file: String, template: WorkflowTemplate? = nil, graph: WorkflowGraph? = nil,
                diagnostics: [Diagnostic], sources: [String: String]) {
        self.file = file
        self.template = template
        self.graph = graph
        self.diagnostics = diagnostics
        self.sources = sources
    }
    public var isUnreadable: Bool { diagnostics.contains { $0.code == .unreadableFile && $0.file == file } }
}

/// Reads a template from disk (or from bytes), resolves its tools and
/// validates it: the one entry point for `check`, `new` and every load.
public struct TemplateLoader: Sendable {
    public var fileSystem: any FileSystem
    /// `~/.config/flowdir/tools`, then the config's `toolPaths`: searched
    /// after the template's own `tools/`.
    public var userToolDirectories: [String]
    /// The backends a tool's `run.<key>` may name (FlowdirIO's
    /// `Backends.all`, which its `init(fileSystem:userToolDirectories:)` passes).
    public var backends: [any BackendSyntax]

    public init(fileSystem: any FileSystem, userToolDirectories: [String] = [], backends: [any BackendSyntax]) {
        self.fileSystem = fileSystem
        self.userToolDirectories = userToolDirectories
        self.backends = backends
    }

    /// Loads `path`: a template file, or an instance directory (its `workflow.yaml`).
    public func load(path: String) -> LoadedTemplate {
        if fileSystem.isDirectory(path) {
            let workflow = Path.join(path, "workflow.yaml")
            guard fileSystem.isRegularFile(workflow) else {
                return unreadable(path, "is a directory, not a template or an instance (no workflow.yaml in it)")
            }
            return load(path: workflow, toolDirectories: [Path.join(path, "tools")])
        }
        return load(path: path, toolDirectories: [Path.join(Path.directory(of: path), "tools")])
    }

    public func load(path: String, toolDirectories: [String]) -> LoadedTemplate {
        let bytes: [UInt8]
        do {
            bytes = try fileSystem.readFile(path, limit: DocumentReader.maxSize)
        } catch .tooLarge(_, let size, let limit) {
            var result = LoadedTemplate(file: path, diagnostics: [], sources: [:])
            result.diagnostics = [.error(.malformedFile, "the file is \(ByteCount(size)); a template may be at most \(ByteCount(limit))",
                                         file: path, hint: "is this the right file?")]
            return result
        } catch {
            return unreadable(path, "cannot be read: \(error)")
        }
        return load(bytes: bytes, file: path, toolDirectories: toolDirectories)
    }

    public func load(bytes: [UInt8], file: String, toolDirectories: [String]) -> LoadedTemplate {
        var result = LoadedTemplate(file: file, diagnostics: [], sources: [:])
        let parsed: DocumentReader.Parsed
        switch DocumentReader.read(bytes, file: file) {
        case .failure(let d):
            result.diagnostics = [d]
            result.sources[file] = DocumentReader.quotableText(bytes)
            return result
        case .success(let p):
            parsed = p
        }
        result.sources[file] = parsed.text
        let sink = DiagnosticSink()
        guard let template = TemplateDecoder.decode(parsed.value, file: file, sink: sink) else {
            result.diagnostics = sink.diagnostics
            return result
        }
        result.template = template
        let catalog = ToolCatalog(searchPath: toolDirectories + userToolDirectories, fileSystem: fileSystem, backends: backends)
        let validation = TemplateValidator.validate(template, tools: catalog.lookup)
        result.diagnostics = sink.diagnostics + catalog.diagnostics + validation.diagnostics
        result.sources.merge(catalog.sources) { a, _ in a }
        result.toolFiles = catalog.consulted
        result.graph = result.diagnostics.hasErrors ? nil : validation.graph
        return result
    }

    private func unreadable(_ path: String, _ message: String) -> LoadedTemplate {
        LoadedTemplate(file: path, diagnostics: [.error(.unreadableFile, "\(path) \(message)", file: path)], sources: [:])
    }
}
