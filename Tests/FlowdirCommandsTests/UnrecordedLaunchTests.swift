import FlowdirCore
import FlowdirIO
import FlowdirTestSupport
import Foundation
import Testing

/// A job is launched before the commit that records its start; a flowdir
/// killed in between leaves an execution no commit knows. The next start
/// records it as interrupted under its own number, and runs the node under
/// the next: every execution is in the history, no number runs twice.
extension RunCommandTests {
    @Test func aLaunchNoCommitRecordedIsRecordedAsInterrupted() async throws {
        try await offPool { try self.unrecordedLaunch() }
    }

    func unrecordedLaunch() throws {
        let dir = try TemporaryDirectory()
        try oneNodeInstance(dir, node: "one", script: "echo hi > \"$0\"")
        let inst = dir.path + "/inst"
        // As a killed flowdir leaves it: run 1's work folder (its job was
        // launched), and its log named in the journal, nothing in HEAD.
        try FileManager.default.createDirectory(atPath: inst + "/.flowdir/work/one.1", withIntermediateDirectories: true)
        try dir.write("inst/nodes/one/runs/1/log.txt", "half a log\n")
        try dir.write("inst/.flowdir/journal", "nodes/one/runs/1/log.txt\n")
        let r = try CommandRunner.flowdir(["run", "inst"], in: dir.path, environment: env)
        #expect(r.status == 0, "\(r.stderr)")
        let first = try GitCLI.run(["show", "HEAD:nodes/one/runs/1/run.yaml"], in: inst)
        #expect(first.contains("interrupted before its start was recorded"), "\(first)")
        let second = try GitCLI.run(["show", "HEAD:nodes/one/runs/2/run.yaml"], in: inst)
        #expect(!second.contains("error"), "\(second)")
        #expect(InstanceProbe.state(inst, "one") == "succeeded")
        #expect(try GitCLI.run(["show", "HEAD:nodes/one/state.yaml"], in: inst).contains("run: 2"))
        try GitCLI.expectHealthy(inst)

        // Its outputs already moved in (the work folder gone): the log in the journal says it was launched.
        let dir2 = try TemporaryDirectory()
        try oneNodeInstance(dir2, node: "one", script: "echo hi > \"$0\"")
        let inst2 = dir2.path + "/inst"
        try dir2.write("inst/nodes/one/out/out.txt", "hi\n")
        try dir2.write("inst/nodes/one/runs/1/log.txt", "")
        try dir2.write("inst/.flowdir/journal", "nodes/one/runs/1/log.txt\nnodes/one/out/out.txt\n")
        #expect(try CommandRunner.flowdir(["run", "inst"], in: dir2.path, environment: env).status == 0)
        #expect(try GitCLI.run(["show", "HEAD:nodes/one/runs/1/run.yaml"], in: inst2).contains("interrupted"))
        #expect(try GitCLI.run(["show", "HEAD:nodes/one/state.yaml"], in: inst2).contains("run: 2"))
        try GitCLI.expectHealthy(inst2)
    }
}

extension RunCommandTests {
    /// A node whose last attempt failed before its tool started (an input
    /// gone) froze no inputs: `retry` takes the last run that started, or
    /// with none, starts it with the current inputs, instead of saying
    /// there is no run.
    @Test func retryAfterAFailureBeforeStartRunsIt() async throws {
        try await offPool {
            let dir = try TemporaryDirectory()
            try self.oneNodeInstance(dir, node: "one", script: "echo hi > \"$0\"")
            let inst = dir.path + "/inst"
            // As flowdir commits such a failure: run 1, no record of it.
            try dir.write("inst/nodes/one/state.yaml", """
                state: failed
                reason: "input 'a' (nodes/up/out/out.txt) is missing from the folder"
                error: { summary: "input 'a' is missing", code: prepareFailed }
                run: 1
                updatedAt: 2026-11-25T00:00:00Z

                """)
            try GitCLI.run(["-c", "user.name=flowdir", "-c", "user.email=f@x", "commit", "-qam", "one → failed"], in: inst)
            let r = try CommandRunner.flowdir(["retry", "inst", "one"], in: dir.path, environment: self.env)
            #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
            #expect(InstanceProbe.state(inst, "one") == "succeeded")
            #expect(try GitCLI.run(["show", "HEAD:nodes/one/runs/2/run.yaml"], in: inst).contains("node: one"))
            try GitCLI.expectHealthy(inst)
        }
    }
}
