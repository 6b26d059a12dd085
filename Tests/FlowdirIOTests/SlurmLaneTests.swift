import FlowdirCore
@testable import FlowdirIO
import FlowdirTestSupport
import Foundation
import Testing

/// The Slurm executor against a fake cluster behind `SlurmCommands`: the
/// commands it runs, how it reads Slurm's answers, and what it does while
/// the controller is away. The real cluster is in SlurmTests.
@Suite(.tags(.medium)) struct SlurmLaneTests {
    /// A cluster as its commands show it: jobs by id, a controller that can be down.
    final class FakeSlurm: Sendable {
        struct Job { var name: String; var state: String; var reason = "None"; var exit = "0:0" }
        struct World { var jobs: [String: Job] = [:]; var next = 100; var up = true; var calls: [[String]] = []; var sbatchAnswersLost = false }
        let world = Locked(World())

        static let down = (status: Int32(1), output: "slurm_load_jobs error: Unable to contact slurm controller (connect failure)\n")

        var commands: SlurmCommands {
            SlurmCommands { argv in self.answer(argv) }
        }

        func answer(_ argv: [String]) -> (status: Int32, output: String) {
            world.locked { w in
                w.calls.append(argv)
                let command = argv.first { ["sbatch", "squeue", "scontrol", "scancel"].contains($0) } ?? argv[0]
                if !w.up { return Self.down }
                switch command {
                case "sbatch":
                    let name = argv.first { $0.hasPrefix("--job-name=") }.map { String($0.dropFirst(11)) } ?? "?"
                    let id = String(w.next)
                    w.next += 1
                    w.jobs[id] = Job(name: name, state: "PENDING", reason: "Priority")
                    if w.sbatchAnswersLost {
                        // Sent, but the answer lost: the controller went away under it.
                        w.up = false
                        return Self.down
                    }
                    return (0, id + "\n")
                case "squeue":
                    let lines = w.jobs.filter { !["COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "OUT_OF_MEMORY", "NODE_FAIL"].contains($0.value.state) }
                        .map { "\($0.key)|\($0.value.state)|\($0.value.reason)" }
                    return (0, lines.joined(separator: "\n") + (lines.isEmpty ? "" : "\n"))
                case "scontrol":
                    let rest = argv.drop { $0 != "scontrol" }.dropFirst(3)
                    if let id = rest.first, id != "--oneliner" {
                        guard let j = w.jobs[id] else { return (1, "slurm_load_jobs error: Invalid job id specified\n") }
                        return (0, "JobId=\(id) JobName=\(j.name) JobState=\(j.state) Reason=\(j.reason) ExitCode=\(j.exit)\n")
                    }
                    if w.jobs.isEmpty { return (0, "No jobs in the system\n") }
                    return (0, w.jobs.map { "JobId=\($0.key) JobName=\($0.value.name) JobState=\($0.value.state) Reason=\($0.value.reason) \n" }.joined())
                case "scancel":
                    if let id = argv.last, w.jobs[id] != nil { w.jobs[id]!.state = "CANCELLED" }
                    return (0, "")
                default:
                    return (127, "\(command): not found")
                }
            }
        }

        func set(_ id: String, _ state: String, reason: String = "None", exit: String = "0:0") {
            world.locked { $0.jobs[id]?.state = state; $0.jobs[id]?.reason = reason; $0.jobs[id]?.exit = exit }
        }
        func count(_ command: String) -> Int { world.locked { $0.calls.filter { $0.contains(command) }.count } }
        var up: Bool {
            get { world.locked { $0.up } }
            set { world.locked { $0.up = newValue } }
        }
        var jobCount: Int { world.locked { $0.jobs.count } }
    }

    /// What a lane told the engine about one job.
    final class Seen: Sendable {
        let updates = Locked<[String]>([])
        var sink: @Sendable (JobUpdate) -> Void {
            { u in
                let text: String = switch u {
                case .submitted(let id): "submitted \(id)"
                case .running: "running"
                case .progress(let p): "progress \(p)"
                case .note(let n): "note \(n ?? "-")"
                case .offline: "offline"
                case .outputsReady: "outputsReady"
                case .ended(let end, _): "ended \(end)"
                }
                self.updates.locked { $0.append(text) }
            }
        }
        var all: [String] { updates.locked { $0 } }
        /// Runs the lane's timers on `clock` until an update starting with `prefix` comes.
        func wait(for prefix: String, on clock: ManualClock, timeout: Double = 120) async throws {
            do {
                try await clock.advance(until: { self.all.contains(where: { $0.hasPrefix(prefix) }) }, timeout: .seconds(timeout))
            } catch let stalled as ManualClock.Stalled {
                throw GitCLI.Failure(description: "no '\(prefix)' in \(all) (\(stalled))")
            }
        }
    }

    func job(_ dir: TemporaryDirectory, _ n: Int, options: [ParamEntry] = []) -> JobSpec {
        JobSpec(instance: dir.path + "/inst", node: "n\(n)", run: 1, submissionKey: "inst-id/n\(n)/1",
                workDir: dir.path + "/work/n\(n)", logPath: dir.path + "/runs/n\(n)/log.txt",
                work: .backend(key: "slurm", payload: SlurmWork(command: CommandWork(argv: ["sh", "-c", "echo $1", "-", "a b; $(x)"]), options: options)))
    }

    /// Its polls and backoff timed by `clock`, which the test moves.
    func executor(_ slurm: FakeSlurm, poll: Double = 0.05, clock: ManualClock) -> SlurmExecutor {
        SlurmExecutor(pollInterval: poll, commands: slurm.commands, random: { 0 }, clock: clock.flowdirClock)
    }

    // MARK: Reading Slurm

    @Test(arguments: [
        ("PENDING", "None", nil, "pending nil"),
        ("PENDING", "Resources", nil, "pending Resources"),
        ("REQUEUED", "None", nil, "pending requeued"),
        ("RUNNING", "None", nil, "running"),
        ("COMPLETING", "None", nil, "running"),
        ("COMPLETED", "None", "0:0", "completed"),
        ("FAILED", "NonZeroExitCode", "3:0", "failed exited with code 3 (NonZeroExitCode)"),
        ("TIMEOUT", "TimeLimit", "0:15", "failed ran past its time limit (Slurm: TIMEOUT)"),
        ("OUT_OF_MEMORY", "OutOfMemory", "0:125", "failed ran out of memory (Slurm: OUT_OF_MEMORY)"),
        ("NODE_FAIL", "None", "0:0", "failed its node failed (Slurm: NODE_FAIL)"),
        ("CANCELLED", "None", "0:15", "cancelled"),
        ("CANCELLED by 0", "None", "0:15", "cancelled"),
    ] as [(String, String, String?, String)])
    func slurmsStatesAreReadAsDesignSays(_ state: String, _ reason: String, _ exit: String?, _ expected: String) {
        let text: String = switch SlurmState.parse(state, reason: reason, exitCode: exit) {
        case .pending(let r): "pending \(r ?? "nil")"
        case .running: "running"
        case .completed: "completed"
        case .failed(let why): "failed \(why)"
        case .cancelled: "cancelled"
        case .unknown(let s): "unknown \(s)"
        }
        #expect(text == expected)
    }

    @Test func durationsBecomeSlurmsTimeAndItsOwnFormsStay() {
        #expect(SlurmLane.slurmTime("2h") == "02:00:00")
        #expect(SlurmLane.slurmTime("90s") == "00:01:30")
        #expect(SlurmLane.slurmTime("36h") == "1-12:00:00")
        #expect(SlurmLane.slurmTime("30") == "30")
        #expect(SlurmLane.slurmTime("1-00:00:00") == "1-00:00:00")
        #expect(SlurmLane.slurmTime("12:00") == "12:00")
    }

    // MARK: Sending

    @Test func theArgvAndOptionsReachSbatchAsTheyAre() async throws {
        let dir = try TemporaryDirectory()
        let slurm = FakeSlurm()
        let clock = ManualClock()
        let seen = Seen()
        let options = [ParamEntry(key: "partition", value: .string("gpu")), ParamEntry(key: "time", value: .string("2h")),
                       ParamEntry(key: "cpus", value: .int(4)), ParamEntry(key: "mem", value: .string("8G")),
                       ParamEntry(key: "gres", value: .string("gpu:1")), ParamEntry(key: "account", value: .string("lab"))]
        _ = executor(slurm, clock: clock).submit(job(dir, 1, options: options), updates: seen.sink)
        try await seen.wait(for: "submitted 100", on: clock)
        let argv = try #require(slurm.world.locked { $0.calls.first { $0.contains("sbatch") } })
        // The runner script, then the tool's argv, each argument one of sbatch's own.
        #expect(Array(argv.suffix(6)) == [dir.path + "/work/n1/.flowdir-slurm.sh", "sh", "-c", "echo $1", "-", "a b; $(x)"])
        for option in ["--job-name=flowdir-inst-id-n1-1", "--chdir=" + dir.path + "/work/n1", "--output=" + dir.path + "/runs/n1/log.txt",
                       "--partition=gpu", "--time=02:00:00", "--cpus-per-task=4", "--mem=8G", "--gres=gpu:1", "--account=lab"] {
            #expect(argv.contains(option), "\(option) not in \(argv)")
        }
        let script = try String(contentsOfFile: dir.path + "/work/n1/.flowdir-slurm.sh", encoding: .utf8)
        #expect(script.contains("\"$@\""))
    }

    @Test func sentWhileTheControllerWentAwayIsFoundByItsNameNotSentAgain() async throws {
        let dir = try TemporaryDirectory()
        let slurm = FakeSlurm()
        let clock = ManualClock()
        slurm.world.locked { $0.sbatchAnswersLost = true }
        let seen = Seen()
        _ = executor(slurm, clock: clock).submit(job(dir, 1), updates: seen.sink)
        try await seen.wait(for: "note Reconnecting", on: clock)
        #expect(!seen.all.contains { $0.hasPrefix("ended") })
        slurm.world.locked { $0.sbatchAnswersLost = false; $0.up = true }
        try await seen.wait(for: "submitted 100", on: clock)
        #expect(slurm.count("sbatch") == 1 && slurm.jobCount == 1)
    }

    // MARK: Polling

    @Test func oneSqueueAPollForManyJobs() async throws {
        let dir = try TemporaryDirectory()
        let slurm = FakeSlurm()
        let clock = ManualClock()
        let ex = executor(slurm, poll: 0.2, clock: clock)
        let seen = (0..<200).map { _ in Seen() }
        for i in 0..<200 { _ = ex.submit(job(dir, i), updates: seen[i].sink) }
        // 200 sends: on a machine loaded by the rest of the suite they took
        // past a minute once (CI); the bound only guards against a hang.
        for s in seen { try await s.wait(for: "submitted", on: clock, timeout: 300) }
        // A second, poll by poll (each interval and a little): one squeue a poll, never one per job (200).
        try await clock.waitForSleepers(1)
        let before = slurm.count("squeue")
        for _ in 0..<4 { try await clock.advance(by: .milliseconds(250), afterSleepers: 1) }
        try await clock.waitForSleepers(1)
        let polls = slurm.count("squeue") - before
        #expect(polls == 4, "\(polls) squeue calls in four poll intervals")
        #expect(seen[7].all.contains("note Pending in Slurm: Priority"))
    }

    @Test func aRequeuedJobIsFollowedToItsEnd() async throws {
        let dir = try TemporaryDirectory()
        let slurm = FakeSlurm()
        let clock = ManualClock()
        let seen = Seen()
        _ = executor(slurm, clock: clock).submit(job(dir, 1), updates: seen.sink)
        try await seen.wait(for: "submitted 100", on: clock)
        slurm.set("100", "RUNNING")
        try await seen.wait(for: "running", on: clock)
        slurm.set("100", "PENDING", reason: "BeginTime")
        try await seen.wait(for: "note Pending in Slurm: BeginTime", on: clock)
        slurm.set("100", "RUNNING")
        try await clock.advance(until: { seen.all.filter { $0 == "running" }.count == 2 })
        slurm.set("100", "COMPLETED")
        try await seen.wait(for: "ended", on: clock)
        #expect(seen.all.filter { $0 == "running" }.count == 2)
        #expect(seen.all.last == "ended succeeded", "\(seen.all)")
        #expect(slurm.count("sbatch") == 1)
    }

    @Test func aControllerAwayIsReconnectingNeverAFailure() async throws {
        let dir = try TemporaryDirectory()
        let slurm = FakeSlurm()
        let clock = ManualClock()
        let seen = Seen()
        _ = executor(slurm, clock: clock).submit(job(dir, 1), updates: seen.sink)
        try await seen.wait(for: "submitted 100", on: clock)
        slurm.set("100", "RUNNING")
        try await seen.wait(for: "running", on: clock)
        slurm.up = false
        try await seen.wait(for: "note Reconnecting… (squeue", on: clock)
        // The job ends while the controller is away; it is read once it is back.
        slurm.set("100", "COMPLETED")
        // Three more tries (backing off) while it is away: none reads the end.
        for _ in 0..<3 {
            try await clock.waitForSleepers(1)
            clock.advanceToNextDeadline()
        }
        try await clock.waitForSleepers(1)
        #expect(slurm.count("squeue") >= 4)
        #expect(!seen.all.contains { $0.hasPrefix("ended") })
        slurm.up = true
        try await seen.wait(for: "ended", on: clock, timeout: 20)
        #expect(seen.all.last == "ended succeeded", "\(seen.all)")
    }

    @Test func aJobThatLeftTheQueueEndsAsScontrolSays() async throws {
        let dir = try TemporaryDirectory()
        let slurm = FakeSlurm()
        let clock = ManualClock()
        let seen = Seen()
        _ = executor(slurm, clock: clock).submit(job(dir, 1), updates: seen.sink)
        try await seen.wait(for: "submitted 100", on: clock)
        slurm.set("100", "OUT_OF_MEMORY", reason: "OutOfMemory", exit: "0:125")
        try await seen.wait(for: "ended", on: clock)
        #expect(seen.all.last?.contains("ran out of memory (Slurm: OUT_OF_MEMORY)") == true, "\(seen.all)")
    }

    @Test func cancelIsScancelAndEndsWithoutAReason() async throws {
        let dir = try TemporaryDirectory()
        let slurm = FakeSlurm()
        let clock = ManualClock()
        let seen = Seen()
        let handle = executor(slurm, clock: clock).submit(job(dir, 1), updates: seen.sink)
        try await seen.wait(for: "submitted 100", on: clock)
        handle.cancel()
        try await seen.wait(for: "ended", on: clock)
        #expect(slurm.count("scancel") == 1)
        #expect(seen.all.last == "ended cancelled(nil)", "\(seen.all)")
    }
}
