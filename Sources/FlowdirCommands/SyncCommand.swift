import ArgumentParser
import FlowdirCore
import FlowdirIO
import FlowdirRuntime

/// `flowdir sync [<instance>…]`: fetch, merge by the rules of docs/commands.md
/// ("Sync between machines"), push.
struct SyncCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sync",
        abstract: "Fetch, merge and push instances with their git remote, in one step.",
        discussion: """
            Transport is your own git (ssh config, keys, credential helpers apply); the merge is \
            flowdir's: a node's state by run number then state, params edited on both sides kept \
            beside as params.conflict.yaml ("Params conflict"), a question answered on both kept as \
            inbox/<node>.<file>.conflict with why. With no instance, every instance under the roots \
            that has the remote. Exit 1 if any sync failed.
            """
    )

    @Argument(help: "Instances: paths, ids or titles (default: every one under the roots with the remote).")
    var instances: [String] = []

    @Option(help: "The git remote (default: the config's sync.remote, else origin).")
    var remote: String?

    @Option(help: "Where to look up names (default: the config's roots, or the current folder).")
    var root: String?

    func run() async throws {
        let ctx = try Context.load()
        let remote = self.remote ?? ctx.config.syncRemote
        guard GitArguments.isName(remote) else { throw CommandError(GitArguments.refusal("remote", remote)) }
        var paths: [String] = []
        if instances.isEmpty {
            paths = ctx.instances(root: root).filter { GitRepository.hasRemote(remote, at: $0) }
            if paths.isEmpty { Output.line("Nothing to sync: no instance under \(ctx.roots(root).joined(separator: ", ")) has a remote '\(remote)'.") }
        } else {
            paths = try instances.map { try ctx.resolve($0, root: root) }
        }
        let syncer = Syncer(remote: remote, clock: ctx.clock)
        var failed = 0
        for path in paths {
            do {
                let r = try await syncer.sync(path)
                Output.line(Self.describe(r, remote: remote))
                for note in r.notes { Output.line("  " + note) }
            } catch {
                failed += 1
                Output.error("\(path): \(error)")
            }
        }
        if failed > 0 { throw ExitCode(1) }
    }

    static func describe(_ r: SyncReport, remote: String) -> String {
        if r.incoming == 0 && r.outgoing == 0 { return "\(r.instance): up to date with \(remote)" }
        var parts: [String] = []
        if r.incoming > 0 { parts.append("\(r.incoming) commit\(r.incoming == 1 ? "" : "s") in" + (r.merged ? ", merged" : "")) }
        if r.outgoing > 0 { parts.append("\(r.outgoing) out") }
        if r.contentSent > 0 { parts.append("\(r.contentSent) large file\(r.contentSent == 1 ? "" : "s") sent (\(ByteCount(Int(r.contentBytesSent))))") }
        return "\(r.instance): " + parts.joined(separator: ", ")
    }
}
