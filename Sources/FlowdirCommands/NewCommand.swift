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
        let ctx = try Context.load()
        let fs = LocalFileSystem()
        let path = try locateTemplate(ctx, fs)
        let loader = ctx.loader
        let loaded = loader.load(path: path)
        let renderer = DiagnosticRenderer(sources: loaded.sources, useColor: ctx.terminal.colorErr)
        for d in loaded.diagnostics.sortedByLocation() { Output.error(renderer.render(d)) }
        guard loaded.isValid, let graph = loaded.graph else {
            throw CommandError("\(path) is invalid; nothing was created", hint: "fix the errors above (`flowdir check \(path)`)")
        }
        let parsed = try overrides.map(InstanceCreator.Override.init(parsing:))
        let title = self.title ?? graph.template.name
        let dir = directory ?? Self.freeName(Slug.make(title))
        Self.removeLeftovers(beside: dir)
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
        Output.line("Created '\(TerminalText.oneLine(title))' in \(TerminalText.oneLine(dir)): \(graph.nodes.count) nodes, \(ready) ready, \(graph.nodes.count - ready) blocked")
        Output.line("  next: flowdir show \(TerminalText.oneLine(dir))")
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

    /// Removes the half-built folders that a `new` killed half-way left
    /// beside `directory`, whatever instance it was making: hidden
    /// `.<name>.creating-<pid>-<8 hex>` folders (`InstanceCreator`) whose
    /// creator is gone from this machine, or whose pid now names a process
    /// that started after the folder last changed (the pid was reused, as
    /// after a reboot). Folders of an older flowdir, without a pid, go after
    /// an hour. A creator still at work keeps its folder.
    static func removeLeftovers(beside directory: String) {
        let parent = Path.directory(of: directory).isEmpty ? "." : Path.directory(of: directory)
        for name in (try? LocalFileSystem().listDirectory(parent)) ?? [] where name.hasPrefix(".") {
            guard let creator = stagingCreator(name) else { continue }
            let full = Path.join(parent, name)
            var st = stat()
            guard lstat(full, &st) == 0, st.st_mode & S_IFMT == S_IFDIR else { continue }
            let changed = Double(st.st_mtim.tv_sec)
            if let pid = creator {
                if pid == getpid() { continue }
                if ProcessTable.isAlive(pid), !(startTime(of: pid).map { $0 > changed + 1 } ?? false) { continue }
            } else if Double(time(nil)) - changed < 3600 {
                continue
            }
            try? Files.removeTree(full)
        }
    }

    /// For `.<name>.creating-<pid>-<8 hex>`, `pid`; for an older flowdir's
    /// `.<name>.creating-<8 hex>`, `.some(nil)`; for any other name, `nil`.
    static func stagingCreator(_ name: String) -> Int32?? {
        let parts = name.split(separator: "-", omittingEmptySubsequences: false)
        guard let random = parts.last, random.count == 8, random.allSatisfy(\.isHexDigit) else { return nil }
        let pid = parts.count >= 3 ? Int32(parts[parts.count - 2]) : nil
        let stem = name.dropLast(random.count + 1 + (pid.map { "\($0)".count + 1 } ?? 0))
        // A dot, the instance's folder name, `.creating`.
        guard stem.hasSuffix(".creating"), stem.dropLast(".creating".count).count > 1 else { return nil }
        return .some(pid)
    }

    /// When a live process started (seconds since the epoch), from /proc.
    static func startTime(of pid: Int32) -> Double? {
        guard let stat = try? LocalFileSystem().readFile("/proc/\(pid)/stat", limit: 4096),
              let boot = try? LocalFileSystem().readFile("/proc/stat", limit: 1 << 16) else { return nil }
        let text = String(decoding: stat, as: UTF8.self)
        guard let close = text.lastIndex(of: ")") else { return nil }
        // Fields after the command name; the 22nd of the line, starttime, is the 20th of these.
        let fields = text[text.index(after: close)...].split(separator: " ")
        let btime = String(decoding: boot, as: UTF8.self).split(separator: "\n").first { $0.hasPrefix("btime ") }
        guard fields.count > 19, let ticks = Double(fields[19]), let btime, let since = Double(btime.dropFirst(6)) else { return nil }
        let hz = Double(sysconf(Int32(_SC_CLK_TCK)))
        return hz > 0 ? since + ticks / hz : nil
    }

    /// `name`, or `name-2`, `name-3`… whichever does not exist yet.
    static func freeName(_ name: String) -> String {
        if !Files.exists(name) { return name }
        var n = 2
        while Files.exists("\(name)-\(n)") { n += 1 }
        return "\(name)-\(n)"
    }
}
