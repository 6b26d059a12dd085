import ArgumentParser
import FlowdirCore
import FlowdirIO
import FlowdirRuntime
import FlowdirTemplates

/// `flowdir lease show|take|release <instance>`: which machine runs a
/// shared instance's jobs (docs/commands.md, "Sync between machines").
struct LeaseCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "lease",
        abstract: "Show, take or release which machine runs a shared instance's jobs.",
        discussion: """
            The machine that runs a synced instance's jobs holds its lease (instance.yaml: lease: { host, until }), \
            renewed while it has jobs. Another machine never starts a node while the lease is live; once it lapses, \
            `take` makes this machine the one (run and the watcher take a lapsed lease by themselves), and the next \
            run follows the remote jobs the other machine started, never sending them again. This machine is \
            FLOWDIR_HOST, else its host name.
            """
    )

    enum Action: String, ExpressibleByArgument, CaseIterable { case show, take, release }

    @Argument(help: "show, take or release.")
    var action: Action

    @Argument(help: "An instance: a path, an id, or a title.")
    var instance: String

    @Flag(help: "Take it even though another machine's lease is live (only when that machine is gone for good).")
    var force = false

    @Option(help: "Where to look up names (default: the config's roots, or the current folder).")
    var root: String?

    func run() async throws {
        let ctx = try Context.load()
        let path = try ctx.resolve(instance, root: root)
        let now = ctx.clock.now()
        let me = Host.name
        if action == .show {
            let lease = try ctx.reader.read(instanceRecordOnly: path)?.lease
            Output.line(Self.describe(lease, me: me, now: now))
            return
        }
        let shared = GitRepository.hasRemote(ctx.config.syncRemote, at: path)
        if shared, action == .take, !force {
            // Taken by pushing it: the push goes through only if no other machine pushed one first.
            let r = try await Syncer(remote: ctx.config.syncRemote, clock: ctx.clock, takeLease: true, leaseDuration: ctx.config.leaseDuration).sync(path)
            if let l = r.lease, l.heldElsewhere(than: me, at: now) {
                throw CommandError("\(l.host) holds the lease of \(path) until \(l.until.iso8601)",
                                   hint: "wait for it to lapse (its jobs run there), or `--force` if \(l.host) is gone for good", exitCode: 75)
            }
            Output.line("\(path): \(Self.describe(r.lease, me: me, now: now))")
            return
        }
        let open = try OpenInstance.open(path, purpose: "lease \(action.rawValue)", reader: ctx.reader, clock: ctx.clock)
        var record = open.snapshot.record
        switch action {
        case .take:
            if let l = record.lease, l.heldElsewhere(than: me, at: now), !force {
                try? open.close()
                throw CommandError("\(l.host) holds the lease of '\(record.title)' until \(l.until.iso8601)",
                                   hint: "wait for it to lapse (its jobs run there), or `--force` if \(l.host) is gone for good", exitCode: 75)
            }
            record.lease = Lease(host: me, until: now + ctx.config.leaseDuration)
        case .release:
            guard let l = record.lease, l.host == me else {
                try open.close()
                Output.line("'\(record.title)': \(Self.describe(record.lease, me: me, now: now)); nothing to release.")
                return
            }
            record.lease = nil
        case .show:
            try open.close()
            return
        }
        try open.commit([.write(InstancePaths.instanceFile, InstanceCodec.encode(record))],
                        message: CommitMessage(summary: "Lease of '\(record.title)' \(action == .take ? "taken" : "released") by \(me)", event: "lease"),
                        author: open.store.personSignature())
        try open.close()
        // Shared: the other machine learns of it with the push.
        if shared { _ = try await Syncer(remote: ctx.config.syncRemote, clock: ctx.clock).sync(path) }
        Output.line("'\(record.title)': \(Self.describe(record.lease, me: me, now: now))")
    }

    static func describe(_ lease: Lease?, me: String, now: Timestamp) -> String {
        guard let l = lease else { return "no lease: the next machine to run it takes one" }
        let whose = l.host == me ? "this machine (\(me))" : l.host
        return l.isLive(at: now) ? "leased by \(whose) until \(l.until.iso8601)" : "lease of \(whose) lapsed at \(l.until.iso8601)"
    }
}
