#if canImport(Glibc)
import Glibc
#endif
import ArgumentParser
import FlowdirCore
import FlowdirIO
import FlowdirTemplates

/// `flowdir new <template> [<dir>]`: a new instance, validated first.
struct NewCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "new",
        abstract: "Create an instance of a template: a new folder and git repository.",
        discussion: """
            TEMPLATE is a file, or the name of one listed by `flowdir templates`. The template \
            is validated first; on any error nothing is created. Params can be set with \
            --set node.param=value (the value is read as YAML: 30, 4.5, true, "text").
            """
    )

    @Argument(help: "A template file, or a template's name.", completion: .file())
    var template: String

    @Argument(help: "The folder to create (default: from the title, in the current folder).", completion: .directory)
    var directory: String?

    @Option(help: "The instance's title (default: the template's name).")
    var title: String?

    @Option(name: .customLong("set"), help: ArgumentHelp("Set a param: node.param=value.", valueName: "node.param=value"))
    var overrides: [String] = []

    func run() throws {
        let (message, directory) = try perform(Context.load())
        Output.line(message)
        Output.line("  next: flowdir show \(TerminalText.oneLine(Shell.quote(directory)))")
    }

    /// What `run` prints first, and the new instance's folder.
    func perform(_ ctx: Context) throws -> (message: String, directory: String) {
        try Self.create(ctx, template: try locateTemplate(ctx, LocalFileSystem()), directory: directory, title: title,
                        overrides: overrides)
    }

    /// A new instance of the template file at `path` (for `flowdir serve`
    /// too: by value, never through arguments).
    static func create(_ ctx: Context, template path: String, directory: String?, title: String?,
                       overrides: [String]) throws -> (message: String, directory: String) {
        let loader = ctx.loader
        let loaded = loader.load(path: path)
        let renderer = DiagnosticRenderer(sources: loaded.sources, useColor: ctx.terminal.colorErr)
        for d in loaded.diagnostics.sortedByLocation() { Output.error(renderer.render(d)) }
        guard loaded.isValid, let graph = loaded.graph else {
            throw CommandError("\(path) is invalid; nothing was created", hint: "fix the errors above (`\(Shell.command(["flowdir", "check", path]))`)")
        }
        let parsed = try overrides.map(InstanceCreator.Override.init(parsing:))
        let title = title ?? graph.template.name
        let dir = directory ?? Self.freeName(Slug.make(title))
        try InstanceCreator(clock: ctx.clock, registry: ctx.registry).create(template: loaded, templatePath: path, directory: dir,
                                                     title: title, overrides: parsed)
        // Loaded once more as the instance, into its workflow cache: the
        // first run then starts without parsing and validating it again.
        if let record = try? ctx.reader.read(instanceRecordOnly: dir) {
            _ = TemplateCache.load(instance: dir, workflowFile: Path.join(dir, InstancePaths.workflowFile),
                                   toolDirectories: ctx.reader.toolDirectories(dir, record), loader: loader)
        }
        let states = InitialStates.of(graph)
        let ready = states.values.filter { $0 == .ready }.count
        return ("Created '\(TerminalText.oneLine(title))' in \(TerminalText.oneLine(dir)): \(graph.nodes.count) nodes, \(ready) ready, \(graph.nodes.count - ready) blocked", dir)
    }

    /// A file path, or a template's file name or `name:` in the template folders.
    private func locateTemplate(_ ctx: Context, _ fs: LocalFileSystem) throws -> String {
        if fs.isRegularFile(template) { return template }
        var known: [String] = []
        for dir in ["workflows", ctx.paths.templateDirectory] where fs.isDirectory(dir) {
            for name in (try? fs.listDirectory(dir)) ?? [] where TemplatesCommand.isTemplateName(name) {
                let path = Path.join(dir, name)
                known.append(Path.removingExtension(name))
                if Path.removingExtension(name) == template || name == template { return path }
            }
        }
        throw CommandError("no template '\(template)': not a file, nor a template in ./workflows or \(ctx.paths.templateDirectory)",
                           hint: Suggest.hint(for: template, in: known) ?? "`flowdir templates` lists them")
    }

    /// `name`, or `name-2`, `name-3`… whichever does not exist yet.
    static func freeName(_ name: String) -> String {
        if !Files.exists(name) { return name }
        var n = 2
        while Files.exists("\(name)-\(n)") { n += 1 }
        return "\(name)-\(n)"
    }
}
