import ArgumentParser
import FlowdirCore
import FlowdirIO
import FlowdirTemplates

/// `flowdir archive <instance>`: hidden from `ls` and the watcher's work,
/// kept whole.
struct ArchiveCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "archive",
        abstract: "Archive an instance (or --undo it): hidden from `ls`, kept whole."
    )

    @Argument(help: "An instance: a path, an id, or a title.")
    var instance: String

    @Flag(help: "Unarchive.")
    var undo = false

    @Option(help: "Where to look up names (default: the config's roots, or the current folder).")
    var root: String?

    func run() throws {
        Output.line(try perform(Context.load()))
    }

    func perform(_ ctx: Context) throws -> String {
        try Self.archive(ctx, path: try ctx.resolve(instance, root: root), undo: undo)
    }

    /// Archives (or with `undo` unarchives) the instance at `path`.
    static func archive(_ ctx: Context, path: String, undo: Bool) throws -> String {
        let open = try OpenInstance.open(path, purpose: undo ? "unarchive" : "archive", reader: ctx.reader, clock: ctx.clock)
        defer { try? open.close() }
        var record = open.snapshot.record
        guard record.archived == undo else {
            return "'\(record.title)' is \(undo ? "not" : "already") archived."
        }
        record.archived = !undo
        try open.commit([.write(InstancePaths.instanceFile, InstanceCodec.encode(record))],
                        message: CommitMessage(summary: "\(undo ? "Unarchive" : "Archive") '\(record.title)'", event: "archive"),
                        author: open.store.personSignature())
        return "\(undo ? "Unarchived" : "Archived") '\(record.title)' (\(path))."
    }
}
