#if canImport(Glibc)
import Glibc
#endif
import FlowdirCore
@testable import FlowdirIO
import FlowdirTemplates
import FlowdirTestSupport
import Foundation
import Testing

/// The ssh executor (docs/ssh-backend.md) against a real sshd on loopback:
/// how it polls a host, and how it reads what the host answers.
@Suite(.tags(.medium, .sshd), Component.sshd.needed) struct SSHLaneTests {
    /// Three jobs on one host: each poll is one ssh call, which asks after
    /// all of them at once.
    @Test func oneCallAPollForEveryJobOnAHost() async throws {
        let dir = try TemporaryDirectory()
        let sshd = try SSHServer(dir: dir.path + "/ssh")
        defer { sshd.stop() }
        let calls = dir.path + "/polls"
        // The user's ssh, noting how many runs each poll asks after.
        try dir.write("myssh", """
            #!/bin/sh
            case "$*" in
            *@@flowdir-end*) input=$(cat); printf '%s\\n' "$input" | grep -c . >> \(calls); printf '%s\\n' "$input" | exec ssh -F \(sshd.dir)/ssh_config "$@" ;;
            *) exec ssh -F \(sshd.dir)/ssh_config "$@" ;;
            esac
            """)
        chmod(dir.path + "/myssh", 0o755)
        let executor = SSHExecutor(pollInterval: 0.2, sshCommand: dir.path + "/myssh")
        let ended = Locked<[String: JobEnd]>([:])
        for n in 1...3 {
            // Each job waits for the others: on a loaded machine one could end before the next is sent.
            let work = SSHWork(host: "flowdir-test", dir: dir.path + "/runs",
                               argv: ["sh", "-c", "while [ ! -e \(dir.path)/go ]; do sleep 0.05; done; echo \(n) > out.txt"], uploads: [], toolDir: nil)
            let job = JobSpec(instance: dir.path + "/inst", node: "n\(n)", run: 1, submissionKey: "inst-id/n\(n)/1",
                              workDir: dir.path + "/work/n\(n)", logPath: dir.path + "/runs-local/n\(n)/log.txt",
                              work: .backend(key: "ssh", payload: work), outputs: [JobOutput(port: "out", file: "out.txt", type: .text)])
            try FileManager.default.createDirectory(atPath: job.workDir, withIntermediateDirectories: true)
            _ = executor.submit(job) { update in
                switch update {
                case .outputsReady:
                    Task {
                        do throws(NodeError) {
                            try await executor.fetchOutputs(job, jobID: nil)
                            ended.locked { $0[job.node] = .succeeded }
                        } catch {
                            ended.locked { $0[job.node] = .failed(error) }
                        }
                    }
                case .ended(let how, _): ended.locked { $0[job.node] = how }
                default: break
                }
            }
        }
        // The jobs end once a poll has asked after all three. Generous bounds: they only guard against a hang.
        func asked() -> [Int] {
            ((try? String(contentsOfFile: calls, encoding: .utf8)) ?? "").split(separator: "\n").compactMap { Int($0) }
        }
        #expect(await Eventually.until(timeout: .seconds(120), every: .milliseconds(50)) { asked().contains(3) },
                "no poll asked after the three jobs: \(asked())")
        FileManager.default.createFile(atPath: dir.path + "/go", contents: nil)
        await Eventually.until(timeout: .seconds(120), every: .milliseconds(50)) { ended.locked { $0.count } >= 3 }
        #expect(ended.locked { $0 } == ["n1": .succeeded, "n2": .succeeded, "n3": .succeeded])
        for n in 1...3 {
            #expect(try String(contentsOfFile: dir.path + "/work/n\(n)/out.txt", encoding: .utf8) == "\(n)\n")
        }
        let polls = asked()
        #expect(polls.count == (await executor.pollCalls("flowdir-test")), "\(polls)")
        #expect(polls.max() == 3, "\(polls)")
    }

    /// A run has ended when its command has, though its process group
    /// lives on: here a child it left behind; on a host whose init reaps no
    /// orphans, the job's own shell as a zombie (which `kill -0` finds too).
    /// Such a run once stayed "running" for ever in a loaded CI.
    @Test func aRunEndsWithItsCommandThoughItsGroupLivesOn() async throws {
        let dir = try TemporaryDirectory()
        let sshd = try SSHServer(dir: dir.path + "/ssh")
        defer { sshd.stop() }
        let (executor, job) = try Self.oneJob(dir, sshd, argv: ["sh", "-c", "sleep 600 & echo done > out.txt"])
        let ended = Locked<JobEnd?>(nil)
        _ = executor.submit(job) { update in
            switch update {
            case .outputsReady:
                Task {
                    do throws(NodeError) {
                        try await executor.fetchOutputs(job, jobID: nil)
                        ended.locked { $0 = .succeeded }
                    } catch {
                        ended.locked { $0 = .failed(error) }
                    }
                }
            case .ended(let how, _): ended.locked { $0 = how }
            default: break
            }
        }
        defer {
            // The child left behind goes with the test.
            if let pid = try? String(contentsOfFile: dir.path + "/runs/inst-id-n-1/.flowdir-pid", encoding: .utf8),
               let group = Int32(pid.trimmingCharacters(in: .whitespacesAndNewlines)) { kill(-group, SIGKILL) }
        }
        // Generous: it only guards against a hang (the child lives 600 s).
        await Eventually.until(timeout: .seconds(120)) { ended.locked { $0 } != nil }
        #expect(ended.locked { $0 } == .succeeded)
        #expect(try String(contentsOfFile: job.workDir + "/out.txt", encoding: .utf8) == "done\n")
    }

    /// A run whose shell was killed (no exit code) is lost, though its
    /// processes stay as zombies: here this process, a subreaper that never
    /// waits for them, is the host's init that reaps no orphans. `kill -0`
    /// finds zombies: such a run looked running for ever.
    @Test func aKilledRunIsLostThoughItsProcessesStayUnreaped() async throws {
        _ = Subreaper.become  // before the sshd starts: its orphans come here
        let dir = try TemporaryDirectory()
        let sshd = try SSHServer(dir: dir.path + "/ssh")
        defer { sshd.stop() }
        // Its command kills the job's shell, which so writes no exit code, then ends too.
        let (executor, job) = try Self.oneJob(dir, sshd, argv: ["sh", "-c", "kill -KILL $PPID; sleep 0.5"])
        let ended = Locked<JobEnd?>(nil)
        _ = executor.submit(job) { update in
            if case .ended(let how, _) = update { ended.locked { $0 = how } }
        }
        // Generous: it only guards against a hang.
        await Eventually.until(timeout: .seconds(120)) { ended.locked { $0 } != nil }
        guard case .failed(let error)? = ended.locked({ $0 }) else {
            Issue.record("the run did not end as lost: \(String(describing: ended.locked { $0 }))")
            return
        }
        #expect(error.code == "jobLost", "\(error)")
        #expect(!FileManager.default.fileExists(atPath: dir.path + "/runs/inst-id-n-1/.flowdir-exit"))
    }

    /// An executor on the loopback sshd and one job (node `n`, output `out.txt`) running `argv` there.
    static func oneJob(_ dir: TemporaryDirectory, _ sshd: SSHServer, argv: [String]) throws -> (SSHExecutor, JobSpec) {
        let executor = SSHExecutor(pollInterval: 0.2, sshCommand: "ssh -F \(sshd.dir)/ssh_config")
        let work = SSHWork(host: "flowdir-test", dir: dir.path + "/runs", argv: argv, uploads: [], toolDir: nil)
        let job = JobSpec(instance: dir.path + "/inst", node: "n", run: 1, submissionKey: "inst-id/n/1",
                          workDir: dir.path + "/work/n", logPath: dir.path + "/runs-local/n/log.txt",
                          work: .backend(key: "ssh", payload: work), outputs: [JobOutput(port: "out", file: "out.txt", type: .text)])
        try FileManager.default.createDirectory(atPath: job.workDir, withIntermediateDirectories: true)
        return (executor, job)
    }

    @Test func aPollsAnswerIsReadRecordByRecordAndACutOneIsNot() {
        let answer = Array("@@flowdir a-n-1 running 0 5 5\nhello@@flowdir b-n-1 exit 3 0 0\n@@flowdir c-n-1 exit cancelled 2 1\nx@@flowdir-end\n".utf8)
        #expect(SSHScripts.parse(answer) == [
            SSHScripts.Report(run: "a-n-1", state: "running", code: "0", logSize: 5, log: Array("hello".utf8)),
            SSHScripts.Report(run: "b-n-1", state: "exit", code: "3", logSize: 0, log: []),
            SSHScripts.Report(run: "c-n-1", state: "exit", code: "cancelled", logSize: 2, log: Array("x".utf8)),
        ])
        #expect(SSHScripts.parse(Array(answer.dropLast(14))) == nil)
        #expect(SSHScripts.parse(Array("@@flowdir a-n-1 running 0 9 9\nshort".utf8)) == nil)
        #expect(SSHScripts.runID("9f0c-uuid/stylize1/12") == "9f0c-uuid-stylize1-12")
    }

    /// `flowdir check` finds what is wrong in a `run.ssh`, with line and column.
    @Test func runSSHIsCheckedWhereItIsWritten() throws {
        let tool = """
            kind: Box
            inputs: { image: ImageRef }
            outputs: { out: ImageRef }
            run:
              ssh:
                host: "-oProxyCommand=evil"
                command: [python3, "{tool.dir}/x.py", "{inputs.imag}", "{outputs.out}"]
                dirr: /tmp
            """
        let fs = InMemoryFileSystem(["wf/t.yaml": """
            schema: app.workflow/v2
            name: Box
            nodes:
              - { id: load, kind: ImageLoader, params: { path: a.png } }
              - { id: box, kind: Box }
            edges: [load.image -> box.image]
            """, "wf/tools/Box.yaml": tool])
        let loaded = TemplateLoader(fileSystem: fs).load(path: "wf/t.yaml")
        let errors = loaded.diagnostics.errors.map { "\($0.location.map { "\($0.line):\($0.column)" } ?? "?") \($0.message)" }
        #expect(errors.count == 2, "\(errors)")
        #expect(errors.contains { $0.hasPrefix("6:11 ") && $0.contains("`host` of `run.ssh` of tool Box must be an ssh destination") }, "\(errors)")
        #expect(errors.contains { $0.hasPrefix("7:43 ") && $0.contains("`run.ssh.command` uses {inputs.imag}") }, "\(errors)")
        #expect(loaded.diagnostics.contains { $0.severity == .warning && $0.message.contains("unknown key 'dirr'") })
        // Well written, it loads, on the remote queue.
        let good = InMemoryFileSystem(["wf/t.yaml": "schema: app.workflow/v2\nname: Box\nnodes:\n  - { id: box, kind: Box, params: {} }\n",
                                       "wf/tools/Box.yaml": "kind: Box\noutputs: { out: ImageRef }\nrun: { ssh: { host: gpu-box, command: [x, \"{outputs.out}\"] } }\n"])
        let ok = TemplateLoader(fileSystem: good).load(path: "wf/t.yaml")
        #expect(ok.diagnostics.errors.isEmpty, "\(ok.diagnostics)")
        #expect(ok.graph?.node("box")?.tool?.run.backendKey == "ssh")
        #expect(ok.graph?.node("box")?.tool?.resourceClass == .remote)
    }
}
