import FlowdirCore
import FlowdirTemplates
import Foundation

/// A template through the loader that `check`, `new` and every load use
/// (read, decode, resolve tools, validate), then what flowdir does with a
/// loaded one, each checked to come back as it went:
/// - the document written as YAML (`new` converts JSON to workflow.yaml)
///   and as JSON reads back as the same values;
/// - a valid graph through the workflow cache (`GraphCodec`) is the graph;
/// - each node's params.yaml, as `new` writes it, reads back as its params.
enum TemplateChecks {
    /// The repository's tool files (workflows/tools, examples/tools) in
    /// `w/tools/`, beside the template `w/flow.<ext>`, so kinds resolve as
    /// they do for the examples.
    static let files: InMemoryFileSystem = {
        let fs = InMemoryFileSystem()
        let root = ProcessInfo.processInfo.environment["FLOWDIR_FUZZ_ROOT"] ?? FileManager.default.currentDirectoryPath
        for dir in ["workflows/tools", "examples/tools"] {
            let path = root + "/" + dir
            for name in (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? [] where name.hasSuffix(".yaml") {
                if let data = FileManager.default.contents(atPath: path + "/" + name) { fs.write("w/tools/" + name, bytes: Array(data)) }
            }
        }
        return fs
    }()

    static func check(_ bytes: [UInt8], format: DocumentFormat) {
        let file = "w/flow." + format.rawValue
        let loaded = TemplateLoader(fileSystem: files, backends: []).load(bytes: bytes, file: file, toolDirectories: ["w/tools"])
        // Every problem says where it is, and renders (its line quoted, a caret under it).
        for d in loaded.diagnostics { require(d.location != nil || d.file != nil, "a diagnostic with no place: \(d.message)") }
        _ = DiagnosticRenderer(sources: loaded.sources).render(loaded.diagnostics)
        require(loaded.template != nil || loaded.diagnostics.hasErrors, "no template, and no error saying why")

        if case .success(let parsed) = DocumentReader.read(bytes, file: file) {
            let value = parsed.value.paramValue
            if case .object(let entries) = value { yamlRoundTrip(entries) }
            jsonRoundTrip(value)
        }
        if let graph = loaded.graph {
            graphRoundTrip(loaded, graph)
            for node in graph.nodes { paramsRoundTrip(node) }
        }
    }

    /// What `new` does to a JSON template (OpenInstance.workflowText).
    static func yamlRoundTrip(_ entries: [ParamEntry]) {
        let text = YAMLWriter.document(entries, comments: ["Instantiated from flow.json, converted to YAML."])
        switch DocumentReader.read(Array(text.utf8), file: "workflow.yaml", format: .yaml) {
        case .failure(let d):
            require(false, "the document as YAML does not read back: \(d.message) at \(d.location.map { "\($0.line):\($0.column)" } ?? "?") in \(quoted(text, limit: 400))")
        case .success(let back):
            require(same(back.value.paramValue, .object(entries)), "the document as YAML reads back otherwise: \(quoted(text, limit: 400))")
        }
    }

    static func jsonRoundTrip(_ value: ParamValue) {
        let text = JSONWriter.text(value)
        do {
            let back = try JSONParser.parse(Array(text.utf8), file: "t.json", allowComments: false)
            require(same(back.paramValue, jsonNormal(value)), "the document as JSON reads back otherwise: \(quoted(text, limit: 400))")
        } catch {
            require(false, "the document as JSON does not read back: \(error.message) at \(error.line):\(error.column) in \(quoted(text, limit: 400))")
        }
    }

    /// The workflow cache's promise (GraphCodecTests): what is read back is what was written.
    static func graphRoundTrip(_ loaded: LoadedTemplate, _ graph: WorkflowGraph) {
        let bytes = GraphCodec.encode(graph, diagnostics: loaded.diagnostics, base: "w")
        guard let (back, diagnostics) = GraphCodec.decode(bytes[...], base: "w") else {
            require(false, "the workflow cache cannot read back a graph it wrote")
            return
        }
        var again = LoadedTemplate(file: loaded.file, template: back.template, graph: back, diagnostics: diagnostics, sources: loaded.sources)
        again.toolFiles = loaded.toolFiles
        require(again.fullDescription == loaded.fullDescription, "the workflow cache reads back another graph")
    }

    /// params.yaml as `new` writes it, read as the engine reads it.
    static func paramsRoundTrip(_ node: ResolvedNode) {
        let text = InstanceCodec.encodeParams(node.spec.params, node: node.spec, tool: node.tool)
        let expected = InstanceCodec.effectiveParams(node.spec.params, tool: node.tool)
        switch InstanceCodec.document(Array(text.utf8), file: "nodes/\(node.id)/params.yaml") {
        case .failure(let d):
            require(false, "params.yaml of '\(node.id)' does not read back: \(d.message) in \(quoted(text, limit: 400))")
        case .success(let entries):
            require(same(entries, expected), "params.yaml of '\(node.id)' reads back otherwise: \(quoted(text, limit: 400))")
        }
    }
}
