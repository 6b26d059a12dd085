#if canImport(Glibc)
import Glibc
#endif
import ArgumentParser
import FlowdirCore
import FlowdirIO

/// `flowdir logs <instance> <node> [--run N] [-f]`.
struct LogsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "logs",
        abstract: "Print a run's output; -f follows it live until the run ends."
    )

    @Argument(help: "An instance: a path, an id, or a title.")
    var instance: String

    @Argument(help: "The node.")
    var node: String

    @Option(name: .customLong("run"), help: "Which run (default: the last).")
    var runNumber: Int?

    @Flag(name: .shortAndLong, help: "Follow the output until the run ends.")
    var follow = false

    @Option(help: "Where to look up names (default: the config's roots, or the current folder).")
    var root: String?

    func run() throws {
        let ctx = try Context.load()
        let path = try ctx.resolve(instance, root: root)
        let snapshot = try ctx.reader.read(path)
        guard let state = snapshot.states[node] else {
            throw CommandError("\(path) has no node '\(node)'", hint: Suggest.hint(for: node, in: snapshot.graph?.order ?? []))
        }
        let n = runNumber ?? state.run
        guard n > 0 else { throw CommandError("'\(node)' has not run yet") }
        let relative = InstancePaths.run(node, n) + "/log.txt"
        let file = Path.join(path, relative)
        var offset = 0
        // Never through a symbolic link (docs/security.md): a log committed as a link to a secret is an error.
        do { _ = try FileByteSource(inside: path, relative) } catch .symbolicLink(let link) {
            throw CommandError(FileSystemError.symbolicLink(link).description)
        } catch {}
        func drain() {
            guard let source = try? FileByteSource(inside: path, relative), source.count > offset,
                  let bytes = try? source.bytes(at: offset, length: source.count - offset) else { return }
            Output.write(bytes, to: 1)
            offset += bytes.count
        }
        // A running job's log is made at its first output: none yet is no error.
        guard Files.exists(file) || follow || (n == state.run && state.state.isActive) else {
            throw CommandError("run \(n) of '\(node)' has no log", hint: "`\(Shell.command(["flowdir", "history", path, node]))` shows its runs")
        }
        drain()
        guard follow else { return }
        while true {
            let current = (try? ctx.reader.read(path))?.states[node]
            drain()
            if let current, current.run > n || !current.state.isActive { break }
            ctx.clock.pause(for: .milliseconds(200))
        }
        drain()
    }
}
