import FlowdirCore

/// An argv as a tool writes it (`run.command`, or a backend's `command:`):
/// a non-empty list of arguments whose placeholders name the tool's own
/// inputs, outputs and params. Never a shell line.
public enum ArgvReader {
    /// - Parameter context: how messages name it (`run.command`, `run.slurm.command`).
    public static func read(_ c: MarkedValue, tool: ToolDefinition, context: String, sink: DiagnosticSink) -> CommandTemplate? {
        guard let items = c.items, !items.isEmpty, items.allSatisfy({ $0.scalarText != nil }) else {
            sink.malformed("`\(context)` of tool \(tool.kind) must be a non-empty list of arguments (an argv array, never a shell line)",
                           at: c.location, hint: "for example `[convert, \"{inputs.image}\", \"{outputs.image}\"]`")
            return nil
        }
        let command: CommandTemplate
        do {
            command = try CommandTemplate(parsing: items.compactMap(\.scalarText))
        } catch {
            sink.malformed(error.message, at: items[error.argument].location)
            return nil
        }
        var ok = true
        for (i, pieces) in command.arguments.enumerated() {
            for piece in pieces {
                let (known, kind, name): ([String], String, String)
                switch piece {
                case .input(let p): (known, kind, name) = (tool.inputs.map(\.name), "input", p)
                case .output(let p): (known, kind, name) = (tool.outputs.map(\.name), "output", p)
                case .param(let p): (known, kind, name) = (tool.params.map(\.name), "param", p)
                case .literal, .runDir, .toolDir: continue
                }
                if !known.contains(name) {
                    ok = false
                    sink.malformed("`\(context)` uses {\(kind)s.\(name)}, but tool \(tool.kind) has no \(kind) '\(name)'",
                                   at: items[i].location,
                                   hint: Suggest.hint(for: name, in: known) ?? "declare it under `\(kind)s`")
                }
            }
        }
        return ok ? command : nil
    }
}
