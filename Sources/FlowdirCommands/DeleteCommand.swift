#if canImport(Glibc)
import Glibc
#endif
import ArgumentParser
import FlowdirCore
import FlowdirIO

/// `flowdir delete <instance>`: removes the folder, history and all.
struct DeleteCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "delete",
        abstract: "Delete an instance's folder and its history. Asks first unless --yes."
    )

    @Argument(help: "An instance: a path, an id, or a title.")
    var instance: String

    @Flag(name: .shortAndLong, help: "Do not ask.")
    var yes = false

    @Option(help: "Where to look up names (default: the config's roots, or the current folder).")
    var root: String?

    func run() throws {
        Output.line(try perform(Context.load()))
    }

    func perform(_ ctx: Context) throws -> String {
        try Self.delete(ctx, path: try ctx.resolve(instance, root: root), ask: !yes)
    }

    /// Deletes the instance at `path`, asking on the terminal first when `ask`.
    static func delete(_ ctx: Context, path: String, ask: Bool) throws -> String {
        // Deleting a link removes only the link (as `rm -r link` does); going
        // through it (`link/`, `link/.`) empties the instance and keeps the
        // link. Neither is what was asked: refuse, naming the instance.
        let named = InstanceListing.lastComponent(path)
        let real = Files.realPath(path) ?? path
        if Files.isSymbolicLink(named) {
            throw CommandError("\(named) is a symbolic link to the instance at \(real); nothing was deleted",
                               hint: "`\(Shell.command(["flowdir", "delete", real]))` deletes the instance (then remove the link); `\(Shell.command(["rm", named]))` removes only the link")
        }
        let s = try ctx.reader.read(path)
        if ask {
            guard isatty(0) == 1 else {
                throw CommandError("refusing to delete \(path) without asking, and there is no terminal to ask on",
                                   hint: "add --yes to delete it", exitCode: 1)
            }
            let commits = (try? InstanceHistory.entries(path, limit: 100_000).count) ?? 0
            Output.write(Array("Delete '\(TerminalText.oneLine(s.record.title))' at \(TerminalText.oneLine(path)) and its history (\(commits) commits)? [y/N] ".utf8), to: 2)
            let answer = (readLine() ?? "").trimmed(" \t").lowercased()
            guard answer == "y" || answer == "yes" else {
                return "Kept \(path)."
            }
        }
        // Hold the lock while deleting, so no other flowdir is writing into it.
        // By its real path: `.` or `inst/.` could be emptied but not removed.
        let lock = try InstanceLock(instance: real, purpose: "delete", clock: ctx.clock)
        try Files.removeTree(real)
        lock.release()
        return "Deleted '\(TerminalText.oneLine(s.record.title))' (\(TerminalText.oneLine(path)))."
    }
}
