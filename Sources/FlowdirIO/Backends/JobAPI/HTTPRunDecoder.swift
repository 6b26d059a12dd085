import FlowdirCore
import FlowdirTemplates

/// Checks a tool's `run.http` (docs/templates-and-tools.md) where it is written, so
/// `flowdir check` finds what would otherwise fail only when a node is sent:
/// the endpoint's name, exactly one of `model` and `version`, the
/// placeholders of `input`, and an `outputs` path for every output port.
/// The entries stay as written (`RunSpec.http`); `HTTPRunSpec.work` fills
/// them in for a run.
enum HTTPRunDecoder {
    static func check(_ value: MarkedValue, tool: ToolDefinition, sink: DiagnosticSink) -> Bool {
        let context = "`run.http` of tool \(tool.kind)"
        guard var r = MappingReader(value, context: context, sink: sink) else { return false }
        let errorsBefore = sink.diagnostics.errors.count
        defer { r.finish() }

        if let endpoint = r.string("endpoint", required: true), endpoint.isEmpty || endpoint.contains(where: \.isWhitespace) {
            sink.malformed("`endpoint` of \(context) must name an endpoint under `endpoints:` in the config, found '\(endpoint)'",
                           at: r.value("endpoint")?.location ?? value.location)
        }
        let model = r.entry("model")
        let version = r.entry("version")
        switch (model, version) {
        case (nil, nil):
            sink.malformed("\(context) needs `model: owner/name` or `version: <id>`", at: value.location,
                           hint: "`model: acme/stylize` sends POST {url}/models/acme/stylize/predictions; `version:` sends POST {url}/predictions")
        case (let m?, let v?):
            sink.malformed("\(context) has both `model` and `version`; give one", at: v.keyLocation,
                           hint: "keep `model: \(m.value.scalarText ?? "owner/name")` for a model's latest version, or `version:` for one exact version")
        case (let m?, nil):
            let parts = m.value.string?.split(separator: "/", omittingEmptySubsequences: false) ?? []
            if parts.count != 2 || parts.contains(where: { $0.isEmpty || $0.contains(where: \.isWhitespace) }) {
                sink.malformed("`model` of \(context) must be owner/name, found \(m.value.scalarText.map { "'\($0)'" } ?? m.value.kindName)",
                               at: m.value.location, hint: "for example `model: acme/stylize`")
            }
        case (nil, let v?):
            if (v.value.scalarText ?? "").isEmpty {
                sink.malformed("`version` of \(context) must be a version id, found \(v.value.kindName)", at: v.value.location)
            }
        }

        if let input = r.value("input") {
            if input.entries == nil {
                sink.malformed("`input` of \(context) must be a mapping of the model's input names to values, found \(input.kindName)",
                               at: input.location, hint: "for example `input: { image: \"{inputs.image}\", steps: \"{params.steps}\" }`")
            } else {
                checkInput(input, tool: tool, sink: sink)
            }
        }

        let outputs = r.value("outputs")
        var mapped: Set<String> = []
        if let outputs {
            if let entries = outputs.entries {
                let ports = tool.outputs.map(\.name)
                for e in entries {
                    guard ports.contains(e.key) else {
                        sink.malformed("`outputs` of \(context) maps '\(e.key)', but tool \(tool.kind) has no output '\(e.key)'",
                                       at: e.keyLocation, hint: Suggest.hint(for: e.key, in: ports) ?? "declare it under `outputs`")
                        continue
                    }
                    mapped.insert(e.key)
                    guard let path = e.value.string, OutputPath.parse(path) != nil else {
                        sink.malformed("the path of output '\(e.key)' in \(context) must be like output, output[0], output.image or output.images[1], found \(e.value.scalarText.map { "'\($0)'" } ?? e.value.kindName)",
                                       at: e.value.location)
                        continue
                    }
                }
            } else {
                sink.malformed("`outputs` of \(context) must map output ports to paths in the prediction's output, found \(outputs.kindName)",
                               at: outputs.location, hint: "for example `outputs: { image: output }`")
            }
        }
        let unmapped = tool.outputs.map(\.name).filter { !mapped.contains($0) }
        if !unmapped.isEmpty, outputs?.entries != nil || outputs == nil {
            let list = unmapped.map { "'\($0)'" }.joined(separator: ", ")
            sink.malformed("\(context) does not say where output \(list) is in the prediction's output",
                           at: outputs?.location ?? value.location,
                           hint: "add `outputs: { \(unmapped.map { "\($0): output" }.joined(separator: ", ")) }` (or output[0], output.image, …)")
        }
        return sink.diagnostics.errors.count == errorsBefore
    }

    /// Every string in `input`, at any depth: its placeholders name the
    /// tool's inputs and params; a file goes whole (`"{inputs.image}"`).
    static func checkInput(_ value: MarkedValue, tool: ToolDefinition, sink: DiagnosticSink) {
        switch value.kind {
        case .mapping(let entries): for e in entries { checkInput(e.value, tool: tool, sink: sink) }
        case .sequence(let items): for item in items { checkInput(item, tool: tool, sink: sink) }
        case .string(let text):
            let pieces: [CommandTemplate.Piece]
            do { pieces = try CommandTemplate(parsing: [text]).arguments[0] } catch {
                sink.malformed("in `run.http.input` of tool \(tool.kind): \(error.message)", at: value.location)
                return
            }
            for piece in pieces {
                switch piece {
                case .literal: continue
                case .input(let p):
                    if !tool.inputs.map(\.name).contains(p) {
                        sink.malformed("`run.http.input` uses {inputs.\(p)}, but tool \(tool.kind) has no input '\(p)'", at: value.location,
                                       hint: Suggest.hint(for: p, in: tool.inputs.map(\.name)) ?? "declare it under `inputs`")
                    } else if pieces.count > 1 {
                        // Inside text it would be this machine's path, which means nothing to the server.
                        sink.malformed("`run.http.input` sends a file only as a whole value: \"{inputs.\(p)}\", not inside \"\(text)\"",
                                       at: value.location, hint: "write `\"{inputs.\(p)}\"` alone; it goes as a data: URI or through the files API")
                    }
                case .param(let p):
                    if !tool.params.map(\.name).contains(p) {
                        sink.malformed("`run.http.input` uses {params.\(p)}, but tool \(tool.kind) has no param '\(p)'", at: value.location,
                                       hint: Suggest.hint(for: p, in: tool.params.map(\.name)) ?? "declare it under `params`")
                    }
                case .output, .runDir, .toolDir:
                    sink.malformed("`run.http.input` of tool \(tool.kind) cannot use \"\(text)\": outputs and folders of this machine mean nothing to the server",
                                   at: value.location, hint: "map outputs under `outputs:` instead")
                }
            }
        default: return
        }
    }
}
