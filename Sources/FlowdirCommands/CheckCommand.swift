import ArgumentParser
import FlowdirCore
import FlowdirIO
import FlowdirTemplates

/// `flowdir check <file>…`: validate templates or instances, reporting every
/// problem with its place, the source line and a caret.
struct CheckCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check",
        abstract: "Validate templates or instances; report all errors with their locations.",
        discussion: """
            Each argument is a template file (YAML, JSON or JSONC) or an instance directory. \
            Tools are looked up in the template's tools/ folder, then ~/.config/flowdir/tools, \
            then the built-ins.

            Exit codes: 0 all valid (warnings allowed); 1 at least one is invalid; \
            2 at least one could not be read.
            """
    )

    @Argument(help: "Template files or instance directories.", completion: .file())
    var paths: [String]

    @Flag(help: "Print the results as JSON.")
    var json = false

    @Flag(name: .shortAndLong, help: "Print only errors, and nothing for valid files.")
    var quiet = false

    func run() throws {
        let ctx = try Context.load()
        let loader = ctx.loader, reader = ctx.reader
        let results: [LoadedTemplate] = paths.map { path in
            reader.isInstance(path) ? Self.checkInstance(path, reader) : loader.load(path: path)
        }
        if json {
            try Output.json(results.map(Report.init))
        } else {
            let terminal = Terminal.current
            for result in results {
                let shown = quiet ? result.diagnostics.errors : result.diagnostics
                let renderer = DiagnosticRenderer(sources: result.sources, useColor: terminal.colorOut)
                // Each source's lines found once for all of them (`renderEach`): linear in what is printed.
                for text in renderer.renderEach(shown.sortedByLocation()) { Output.line(text) }
                if !quiet || result.diagnostics.hasErrors {
                    let mark = result.isValid ? terminal.paint("✓", "32") : terminal.paint("✗", "31")
                    var line = "\(mark) \(result.file): \(result.summary)"
                    if result.isValid, let t = result.template {
                        line += " (\(t.nodes.count) nodes, \(t.edges.count) edges)"
                    }
                    Output.line(line)
                }
            }
        }
        if results.contains(where: \.isUnreadable) { throw ExitCode(2) }
        if results.contains(where: { !$0.isValid }) { throw ExitCode(1) }
    }

    /// An instance: its own files too, and tools found as it finds them.
    static func checkInstance(_ path: String, _ reader: InstanceReader) -> LoadedTemplate {
        do {
            return try reader.read(path).workflow
        } catch .malformed(let d) {
            return LoadedTemplate(file: path, diagnostics: [d], sources: [:])
        } catch {
            return LoadedTemplate(file: path, diagnostics: [.error(.malformedFile, "\(error)", file: path)], sources: [:])
        }
    }

    struct Report: Encodable {
        var file: String
        var valid: Bool
        var name: String?
        var nodes: Int?
        var edges: Int?
        var diagnostics: [DiagnosticJSON]

        init(_ r: LoadedTemplate) {
            file = r.file
            valid = r.isValid
            name = r.template?.name
            nodes = r.template?.nodes.count
            edges = r.template?.edges.count
            diagnostics = r.diagnostics.sortedByLocation().map(DiagnosticJSON.init)
        }
    }
}
