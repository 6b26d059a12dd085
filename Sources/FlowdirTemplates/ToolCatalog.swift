import FlowdirCore

/// Finds tool kinds along the search path (docs/templates-and-tools.md): the instance's
/// `tools/`, the template's `tools/`, the user's, then the built-ins. Each
/// kind is looked up once; problems in tool files are kept as diagnostics.
public final class ToolCatalog {
    public let searchPath: [String]
    private let fileSystem: any FileSystem
    private var cache: [String: ToolLookup] = [:]
    public private(set) var diagnostics: [Diagnostic] = []
    public private(set) var sources: [String: String] = [:]
    /// Every path looked at, in order, with the bytes found there (`nil`:
    /// no regular file): all a lookup's outcome depends on, besides the
    /// built-ins (what the workflow cache checks, `TemplateCache`).
    public private(set) var consulted: [ToolFile] = []

    /// The backends a tool's `run.<key>` may name (`Backends.all` in FlowdirIO).
    public let backends: [any BackendSyntax]

    public init(searchPath: [String], fileSystem: any FileSystem, backends: [any BackendSyntax]) {
        self.searchPath = searchPath
        self.fileSystem = fileSystem
        self.backends = backends
    }

    public func lookup(_ kind: String) -> ToolLookup {
        if let hit = cache[kind] { return hit }
        let result = find(kind)
        cache[kind] = result
        return result
    }

    private func find(_ kind: String) -> ToolLookup {
        for dir in searchPath {
            for ext in ["yaml", "yml", "json"] {
                let path = Path.join(dir, "\(kind).\(ext)")
                guard fileSystem.isRegularFile(path) else {
                    consulted.append(ToolFile(path: path, bytes: nil))
                    continue
                }
                return load(path, kind: kind)
            }
        }
        return BuiltinTools.named(kind).map(ToolLookup.found) ?? .notInstalled
    }

    private func load(_ path: String, kind: String) -> ToolLookup {
        let bytes: [UInt8]
        do {
            bytes = try fileSystem.readFile(path, limit: DocumentReader.maxSize)
        } catch {
            diagnostics.append(.error(.unreadableFile, "tool \(kind) cannot be read: \(error)", file: path))
            return .broken
        }
        consulted.append(ToolFile(path: path, bytes: bytes))
        switch DocumentReader.read(bytes, file: path) {
        case .failure(let d):
            diagnostics.append(d)
            sources[path] = DocumentReader.quotableText(bytes)
            return .broken
        case .success(let parsed):
            sources[path] = parsed.text
            let sink = DiagnosticSink()
            let tool = ToolDecoder.decode(parsed.value, file: path, expectedKind: kind, backends: backends, sink: sink)
            diagnostics += sink.diagnostics
            return tool.map(ToolLookup.found) ?? .broken
        }
    }
}

/// A path the tool search looked at, and what it found there.
public struct ToolFile: Sendable, Equatable {
    public var path: String
    /// `nil`: no regular file.
    public var bytes: [UInt8]?

    public init(path: String, bytes: [UInt8]?) {
        self.path = path
        self.bytes = bytes
    }
}
