import ArgumentParser
import FlowdirCore
import FlowdirIO
import FlowdirTemplates

/// `flowdir duplicate <instance> [<dir>]`: the same workflow and params,
/// from the start, with a history of its own.
struct DuplicateCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "duplicate",
        abstract: "Make a new instance with the same workflow, params and private tools, from the start."
    )

    @Argument(help: "An instance: a path, an id, or a title.")
    var instance: String

    @Argument(help: "The new folder (default: beside the original, from the title).", completion: .directory)
    var directory: String?

    @Option(help: "The new instance's title (default: the original's, with \"(copy)\").")
    var title: String?

    @Option(help: "Where to look up names (default: the config's roots, or the current folder).")
    var root: String?

    func run() throws {
        Output.line(try perform(Context.load()).message)
    }

    /// What `run` prints, and the new instance's folder.
    func perform(_ ctx: Context) throws -> (message: String, directory: String) {
        try Self.duplicate(ctx, path: try ctx.resolve(instance, root: root), directory: directory, title: title)
    }

    /// Duplicates the instance at `path` (for `flowdir serve` too: by
    /// value, never through arguments).
    static func duplicate(_ ctx: Context, path: String, directory: String?, title: String?) throws -> (message: String, directory: String) {
        let s = try ctx.reader.read(path)
        guard s.workflow.isValid else {
            throw InstanceError.invalidWorkflow(path: path, diagnostics: s.workflow.diagnostics, sources: s.workflow.sources)
        }
        let newTitle = title ?? s.record.title + " (copy)"
        let dir = directory ?? NewCommand.freeName(Path.join(Path.directory(of: path), Slug.make(newTitle)))
        var overrides: [InstanceCreator.Override] = []
        for (node, entries) in s.params.sorted(by: { $0.key < $1.key }) {
            for e in entries {
                var o = try InstanceCreator.Override(parsing: "\(node).\(e.key)=")
                o.value = e.value
                overrides.append(o)
            }
        }
        let fs = LocalFileSystem()
        var tools: [(String, [UInt8])] = []
        for name in (try? fs.listDirectory(Path.join(path, InstancePaths.tools))) ?? [] {
            let rel = InstancePaths.tools + "/" + name
            // Copied only as the files they are: a link is refused, never followed into the copy.
            do {
                guard let bytes = try fs.readFile(inside: path, rel, limit: 16 << 20) else { continue }
                tools.append((rel, bytes))
            } catch .symbolicLink(let link) {
                throw InstanceError.symbolicLink(link)
            } catch {
                continue
            }
        }
        try InstanceCreator(clock: ctx.clock, registry: ctx.registry).create(template: s.workflow, templatePath: s.record.template, directory: dir,
                                                     title: newTitle, overrides: overrides, extraFiles: tools)
        return ("Duplicated '\(s.record.title)' as '\(newTitle)' in \(dir)", dir)
    }
}
