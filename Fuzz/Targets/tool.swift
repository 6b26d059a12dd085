// A tool file (<Kind>.yaml) found beside a template: decoded, then used by a node of a
// template (its inputs fed by a source node), loaded and checked as TemplateChecks does.
// fuzz-modules: FlowdirCore FlowdirTemplates
// fuzz-sources: Fuzz/Support/Values.swift Fuzz/Support/TemplateChecks.swift Sources/FlowdirTestSupport/InMemoryFileSystem.swift Sources/FlowdirTestSupport/LoadedDescription.swift
// fuzz-seeds: workflows/tools/*.yaml examples/tools/*.yaml Benchmarks/tools/*.yaml Tests/FlowdirTemplatesTests/Fixtures/invalid/tools/*.yaml docs:yaml
// fuzz-dict: yaml
import FlowdirCore
@testable import FlowdirTemplates

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafeRawPointer?, _ size: Int) -> CInt {
    let bytes = fuzzBytes(data, size)
    guard case .success(let parsed) = DocumentReader.read(bytes, file: "w/tools/Tool.yaml") else { return 0 }
    let sink = DiagnosticSink()
    guard let tool = ToolDecoder.decode(parsed.value, file: "w/tools/Tool.yaml", expectedKind: nil, backends: [], sink: sink),
          tool.kind != "FuzzSource", !tool.kind.isEmpty else { return 0 }
    // A source whose outputs feed every input of the tool, then the tool's node.
    let source: [ParamEntry] = [
        ParamEntry(key: "kind", value: .string("FuzzSource")),
        ParamEntry(key: "outputs", value: .object(tool.inputs.map { ParamEntry(key: $0.name, value: .string($0.type.rawValue)) })),
        ParamEntry(key: "run", value: .object([ParamEntry(key: "command", value: .array([.string("true")]))])),
    ]
    let template: [ParamEntry] = [
        ParamEntry(key: "schema", value: .string("app.workflow/v2")),
        ParamEntry(key: "name", value: .string("tool fuzz")),
        ParamEntry(key: "nodes", value: .array([
            .object([ParamEntry(key: "id", value: .string("src")), ParamEntry(key: "kind", value: .string("FuzzSource"))]),
            .object([ParamEntry(key: "id", value: .string("n")), ParamEntry(key: "kind", value: .string(tool.kind))]),
        ])),
        ParamEntry(key: "edges", value: .array(tool.inputs.map {
            .object([ParamEntry(key: "from", value: .array([.string("src"), .string($0.name)])),
                     ParamEntry(key: "to", value: .array([.string("n"), .string($0.name)]))])
        })),
    ]
    let fs = InMemoryFileSystem()
    fs.write("w/tools/\(tool.kind).yaml", bytes: bytes)
    fs.write("w/tools/FuzzSource.yaml", YAMLWriter.document(source))
    let loaded = TemplateLoader(fileSystem: fs, backends: []).load(bytes: Array(YAMLWriter.document(template).utf8), file: "w/flow.yaml",
                                                      toolDirectories: ["w/tools"])
    for d in loaded.diagnostics { require(d.location != nil || d.file != nil, "a diagnostic with no place: \(d.message)") }
    _ = DiagnosticRenderer(sources: loaded.sources).render(loaded.diagnostics)
    if let graph = loaded.graph {
        TemplateChecks.graphRoundTrip(loaded, graph)
        for node in graph.nodes { TemplateChecks.paramsRoundTrip(node) }
    }
    return 0
}
