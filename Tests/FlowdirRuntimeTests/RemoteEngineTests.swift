import FlowdirCore
import FlowdirIO
import FlowdirRuntime
import FlowdirTemplates
import FlowdirTestSupport
import Foundation
import Testing

/// A remote node (`run.http`) feeding a local one, on the scripted executor.
final class RemoteFlow {
    let dir: TemporaryDirectory
    let instance: String

    static let gen = """
        kind: Gen
        resources: remote
        outputs: { out: TextRef }
        params: { steps: { type: integer, default: 30 } }
        run:
          http:
            endpoint: fake
            model: acme/gen
            input: { steps: "{params.steps}", label: "steps={params.steps}" }
            outputs: { out: output }
        """
    static let use = """
        kind: Use
        inputs: { a: TextRef }
        outputs: { out: TextRef }
        run:
          command: [cp, "{inputs.a}", "{outputs.out}"]
        """

    init(name: String = "inst") throws {
        dir = try TemporaryDirectory()
        try dir.write("wf/tools/Gen.yaml", Self.gen)
        try dir.write("wf/tools/Use.yaml", Self.use)
        try dir.write("wf/t.yaml", """
            schema: app.workflow/v2
            name: remote
            nodes:
              - { id: gen, kind: Gen }
              - { id: use, kind: Use }
            edges:
              - gen.out -> use.a
            """)
        let loaded = TemplateLoader(fileSystem: LocalFileSystem()).load(path: dir.path + "/wf/t.yaml")
        instance = dir.path + "/" + name
        try InstanceCreator().create(template: loaded, templatePath: dir.path + "/wf/t.yaml", directory: instance,
                                     title: name, overrides: [])
    }

    func engine(_ executor: ScriptedExecutor) -> Engine {
        Engine(options: EngineOptions(), executors: ExecutorSet([JobWork.commandKey: LocalExecutor(), "http": executor]))
    }

    func git(_ args: String...) throws -> String {
        let r = try CommandRunner.run("/usr/bin/git", ["-C", instance] + args)
        return r.stdout
    }

    /// Every transition the history records for `node`, oldest first.
    func transitions(_ node: String) throws -> [String] {
        try git("log", "--reverse", "--format=%B").split(separator: "\n")
            .filter { $0.hasPrefix("Flowdir-Transition: \(node) ") }
            .map { String($0.split(separator: " ")[2]) }
    }

    func state(_ node: String) throws -> String {
        try String(contentsOfFile: instance + "/nodes/\(node)/state.yaml", encoding: .utf8)
    }
}

@Suite(.serialized, .tags(.large), Tier.notQuick) struct RemoteEngineTests {
    @Test func aRemoteJobGoesThroughEveryStateInOrderEachCommitted() async throws {
        let flow = try RemoteFlow()
        let executor = ScriptedExecutor()
        let outcome = try await flow.engine(executor).run(flow.instance)
        #expect(outcome.exitCode == 0, "\(outcome.states)")
        let seen = try flow.transitions("gen")
        #expect(seen == ["→ready", "ready→queuedRemote", "queuedRemote→runningRemote",
                         "runningRemote→downloading", "downloading→succeeded"], "\(seen)")
        #expect(try String(contentsOfFile: flow.instance + "/nodes/use/out/out.txt", encoding: .utf8) == "out of out\n")
        let state = try flow.state("gen")
        #expect(state.contains("job: job-1"), "\(state)")
        #expect(state.contains("submission: "), "\(state)")
        let record = try String(contentsOfFile: flow.instance + "/nodes/gen/runs/1/run.yaml", encoding: .utf8)
        #expect(record.contains("job: job-1"), "\(record)")
        #expect(executor.calls.submits.count == 1)
        // The submission key was in a commit before the job was sent, and the id after.
        let commits = try flow.git("log", "--reverse", "-p", "--format=COMMIT %s", "--", "nodes/gen/state.yaml")
        let intent = try #require(commits.range(of: "+submission: "))
        let id = try #require(commits.range(of: "+job: job-1"))
        #expect(intent.lowerBound < id.lowerBound)
    }

    @Test func theInputIsTypedAsTheToolSays() throws {
        let work = try HTTPRunSpec.work([
            ParamEntry(key: "endpoint", value: .string("gpu")), ParamEntry(key: "model", value: .string("acme/x")),
            ParamEntry(key: "input", value: .object([
                ParamEntry(key: "steps", value: .string("{params.steps}")),
                ParamEntry(key: "image", value: .string("{inputs.image}")),
                ParamEntry(key: "note", value: .string("n={params.steps}")),
                ParamEntry(key: "flag", value: .string("{params.flag}")),
            ])),
        ], tool: "X", inputs: ["image": "/tmp/i.png"], params: ["steps": "30", "flag": "true"],
           typedParams: [ParamEntry(key: "steps", value: .int(30))])
        #expect(work.input.map(\.key) == ["steps", "image", "note", "flag"])
        #expect(work.input.map(\.value) == [.integer(30), .file(path: "/tmp/i.png"), .string("n=30"), .bool(true)])
        #expect(throws: HTTPRunSpec.Invalid.self) {
            try HTTPRunSpec.work([ParamEntry(key: "endpoint", value: .string("gpu"))], tool: "X", inputs: [:], params: [:], typedParams: [])
        }
    }

    @Test func aFailedJobFailsTheNodeWithTheBackendsWords() async throws {
        let flow = try RemoteFlow()
        let executor = ScriptedExecutor(script: { _, id in
            [.update(.submitted(jobID: id)), .update(.running),
             .update(.ended(.failed(NodeError(summary: "CUDA out of memory", code: "remoteFailed", hint: "fewer steps")), log: nil))]
        })
        let outcome = try await flow.engine(executor).run(flow.instance)
        #expect(outcome.exitCode == 1)
        let state = try flow.state("gen")
        #expect(state.contains("CUDA out of memory"), "\(state)")
        #expect(try flow.transitions("gen").suffix(2) == ["queuedRemote→runningRemote", "runningRemote→failed"])
    }

    @Test func offlineBlocksTheNodeAndItGoesOnOnceThrough() async throws {
        let flow = try RemoteFlow()
        let since = Timestamp(seconds: 1_800_000_000)
        let executor = ScriptedExecutor(script: { _, id in
            [.update(.offline(endpoint: "fake", since: since)), .pause(0.3), .update(.submitted(jobID: id)),
             .update(.running), .update(.outputsReady)]
        })
        // `run` does not wait on an endpoint that cannot be reached: exit 2, the node blocked.
        let first = try await flow.engine(executor).run(flow.instance)
        #expect(first.exitCode == 2)
        #expect(first.states["gen"] == .blocked(.offline(endpoint: "fake", since: since)))
        let history = try flow.git("log", "-p", "--", "nodes/gen/state.yaml")
        #expect(history.contains("reason: \"Offline: 'fake' unreachable since 2027-01-15T08:00:00Z\""), "\(history)")
        // The next run follows it (the backend made it meanwhile): found by its key, not sent again.
        let second = try await flow.engine(executor).run(flow.instance)
        #expect(second.exitCode == 0)
        #expect(executor.calls.submits.count == 1 && executor.calls.reattaches.count == 1)
        #expect(try flow.transitions("gen").contains("blocked→queuedRemote"))
    }

    /// "kill -9" at each step: the instance as a crash leaves it on disk
    /// (copied while the engine is held there), opened by a new engine with
    /// the same backend: the job is followed, never sent again.
    /// Steps 1–4: held before submitted, running, progress, outputs ready;
    /// 5: held while its outputs download.
    @Test(arguments: [1, 2, 3, 4, 5])
    func stoppedAtAnyStepTheJobIsReattachedNotResubmitted(step: Int) async throws {
        let flow = try RemoteFlow()
        var steps: [ScriptedExecutor.Step] = []
        let all: [ScriptedExecutor.Step] = [.update(.submitted(jobID: "job-1")), .update(.running), .update(.progress(0.5)), .update(.outputsReady)]
        steps = step == 5 ? all : Array(all.prefix(step - 1)) + [.pause(0.3), .hold] + Array(all.dropFirst(step - 1))
        let frozen = steps
        let executor = ScriptedExecutor(script: { _, _ in frozen }, holdFetch: step == 5)
        let engine = flow.engine(executor)
        let path = flow.instance
        let first = Task { try await engine.run(path).exitCode }
        // Held: once what it did so far is in HEAD, the folder is as a kill would leave it.
        let expected = step == 1 ? "state: queuedRemote" : step == 2 ? "job: job-1" : step == 5 ? "state: downloading" : "state: runningRemote"
        // Polled off the pool: a subprocess waited on there would keep the engine from running.
        let instance = flow.instance
        let copy = flow.dir.path + "/crashed"
        try await offPool {
            var head = ""
            Eventually.blockingUntil {
                head = (try? CommandRunner.run("/usr/bin/git", ["-C", instance, "show", "HEAD:nodes/gen/state.yaml"]).stdout) ?? ""
                return head.contains(expected)
            }
            #expect(head.contains(expected), "HEAD never had \(expected): \(head)")
            usleep(100_000)
            _ = try CommandRunner.run("/bin/cp", ["-a", instance, copy])
        }
        executor.release(node: "gen")
        _ = try await first.value
        // The crashed copy, opened by a new flowdir: same backend.
        let outcome = try await Engine(options: EngineOptions(), executors: ExecutorSet([JobWork.commandKey: LocalExecutor(), "http": executor]))
            .run(copy)
        #expect(outcome.exitCode == 0, "\(outcome.states)")
        #expect(executor.calls.submits.count == 1, "\(executor.calls.submits)")
        #expect(executor.calls.reattaches.count == 1)
        // Stopped before the id was recorded: looked up by the submission key.
        #expect(executor.calls.reattaches.first?.jobID == (step == 1 ? nil : "job-1"))
        #expect(try String(contentsOfFile: copy + "/nodes/use/out/out.txt", encoding: .utf8) == "out of out\n")
    }

    @Test func cancelCancelsTheRemoteJob() async throws {
        let flow = try RemoteFlow()
        let executor = ScriptedExecutor(script: { _, id in [.update(.submitted(jobID: id)), .update(.running), .hold] })
        let engine = flow.engine(executor)
        let path = flow.instance
        let run = Task { try await engine.run(path).exitCode }
        // Cancelled once it runs there.
        await Eventually.until { (try? flow.state("gen").contains("state: runningRemote")) ?? false }
        let dir = flow.dir.path
        let r = try await offPool { try CommandRunner.flowdir(["cancel", path, "gen"], in: dir) }
        #expect(r.status == 0, "\(r.stderr)")
        #expect(try await run.value == 1)
        #expect(executor.calls.cancels == ["job-1"])
        #expect(try flow.state("gen").contains("state: cancelled"))
    }
}
