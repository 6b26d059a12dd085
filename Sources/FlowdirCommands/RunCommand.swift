#if canImport(Glibc)
import Glibc
#endif
import ArgumentParser
import FlowdirCore
import FlowdirIO
import FlowdirRuntime
import UnixSignals

/// `flowdir run <instance>`: advance until nothing more can happen.
struct RunCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Run an instance's ready nodes until nothing more can happen, without watching.",
        discussion: """
            Every state change is committed as it happens. Nodes left running by a crash are \
            recorded as interrupted and run again.

            Ctrl-C or SIGTERM stop it: jobs running here are stopped and recorded (they run \
            again next time); remote jobs go on where they run and are taken up again by the \
            next run or the watcher.

            Exit codes: 0 every node succeeded; 1 a node failed or was cancelled; 2 the \
            workflow waits on a person, a remote job, changed params or a missing tool; \
            130 or 143 stopped by Ctrl-C or SIGTERM.
            """
    )

    @Argument(help: "An instance: a path, an id, or a title.")
    var instance: String

    @Option(name: .customLong("node"), help: "Only start these nodes (repeatable).")
    var nodes: [String] = []

    @Option(help: "Where to look up names (default: the config's roots, or the current folder).")
    var root: String?

    func run() async throws {
        let ctx = try Context.load()
        let path = try ctx.resolve(instance, root: root)
        let outcome = try await EngineRun.run(ctx, path: path, only: nodes.isEmpty ? nil : Set(nodes))
        throw ExitCode(outcome.exitCode)
    }
}

/// What run, retry and rerun share: the engine, progress on a terminal, the outcome.
enum EngineRun {
    static func run(_ ctx: Context, path: String, only: Set<String>? = nil, retry: [String] = [], retryFrom: Int? = nil, rerun: [String] = [],
                    downstream: Bool = false) async throws -> RunOutcome {
        let color = ctx.terminal.colorErr
        let onTerminal = isatty(2) == 1
        // Progress on a terminal: one line per commit.
        let report: @Sendable (String) -> Void = { line in
            guard onTerminal else { return }
            let text = color ? "\u{1B}[2m· \(line)\u{1B}[0m\n" : "· \(line)\n"
            Output.write(Array(text.utf8), to: 2)
        }
        let notifier = ctx.notifier
        // Shared with another machine: its lease first (taken by pushing it), and what happened here pushed after.
        let shared = GitRepository.hasRemote(ctx.config.syncRemote, at: path)
        var leaseProblem: String?
        if shared {
            do {
                _ = try await Syncer(remote: ctx.config.syncRemote, clock: ctx.clock, takeLease: true, leaseDuration: ctx.config.leaseDuration).sync(path)
            } catch {
                leaseProblem = "\(error)"
            }
        }
        var options = ctx.engineOptions(only: only, notifier: notifier, report: report)
        if shared {
            // A renewal goes out at once (this run holds the instance, so it is pushed, not merged).
            // Content first, as every push: the outputs committed so far go with it.
            let syncer = Syncer(remote: ctx.config.syncRemote, clock: ctx.clock)
            options.leaseRenewed = { path in
                Task {
                    do { try await syncer.pushHead(path) } catch {
                        Output.error("flowdir: warning: the renewed lease of \(path) did not reach \(syncer.remote): \(String(describing: error).split(separator: "\n").first ?? "")")
                    }
                }
            }
        }
        let engine = Engine(clock: ctx.clock, options: options, executors: try ctx.executors())
        // Ctrl-C or SIGTERM: the engine stops what runs here and records it (Stopping.swift), then returns.
        let caught = Locked<Int32?>(nil)
        let signals = Task {
            for await signal in await UnixSignalsSequence(trapping: .sigint, .sigterm) {
                caught.locked { if $0 == nil { $0 = signal.rawValue } }
                await engine.stop()
            }
        }
        var outcome = try await engine.run(path, retry: retry, retryFrom: retryFrom, rerun: rerun, downstream: downstream, reader: ctx.reader)
        signals.cancel()
        outcome.signal = caught.locked { $0 }
        if outcome.stopped {
            Output.error("flowdir: stopped: what ran here is recorded and runs again next time; remote jobs go on where they run")
        }
        if shared {
            do { _ = try await Syncer(remote: ctx.config.syncRemote, clock: ctx.clock).sync(path) } catch {
                Output.error("flowdir: warning: what ran here is committed but not pushed: \(error)")
            }
        }
        print(outcome, ctx)
        let lease = (try? ctx.reader.read(instanceRecordOnly: path))?.lease
        if let lease, lease.heldElsewhere(than: Host.name, at: ctx.clock.now()) {
            Output.line("Leased by \(lease.host) until \(lease.until.iso8601): its jobs run there, so nothing starts here.")
            Output.line("  answers and params edits are taken; `flowdir sync` to exchange; `flowdir lease take` once the lease lapses")
        } else if let leaseProblem {
            Output.line("No lease here, so nothing started: it is taken by pushing it, and that failed:")
            Output.line("  " + leaseProblem.replacingOccurrences(of: "\n", with: "\n  "))
        }
        printQuestions(path, outcome, ctx)
        // A quick hook is let finish; a slow one goes on alone, under its timeout.
        await notifier.drain(upTo: 1)
        return outcome
    }

    /// What the instance asks of a person, and how to answer.
    static func printQuestions(_ path: String, _ outcome: RunOutcome, _ ctx: Context) {
        guard outcome.states.values.contains(.awaitingUser), let awaits = try? ctx.reader.awaits(path, includeDone: false) else { return }
        Output.line()
        Output.line("Waiting for you:")
        for (file, a) in awaits.open {
            Output.line("  \(a.title) — \(file)")
            for line in AwaitPolicy.instructions(a, instanceName: Path.basename(path)).dropFirst().prefix(1) {
                Output.line("    " + line)
            }
        }
    }

    static func print(_ outcome: RunOutcome, _ ctx: Context) {
        let t = ctx.terminal
        var counts: [String: Int] = [:]
        for id in outcome.order { counts[outcome.states[id]?.name ?? "?", default: 0] += 1 }
        let summary = NodeState.names.compactMap { name in counts[name].map { "\($0) \(name)" } }.joined(separator: ", ")
        Output.line(summary)
        for id in outcome.order {
            guard let state = outcome.states[id], state != .succeeded, state != .skipped else { continue }
            Output.line("  " + StatusStyle.paint(state.name, t) + " " + id + (state.reason.map { " — \($0)" } ?? ""))
        }
        for (file, reason) in outcome.refused {
            Output.line("  refused \(file) — \(reason) (set aside as .rejected, with a note in inbox/)")
        }
    }
}
