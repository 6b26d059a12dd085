import FlowdirCore
import FlowdirIO
import FlowdirRuntime
import FlowdirTemplates
import FlowdirTestSupport
import Foundation
import Testing

/// A node whose tool runs (a command, a job API, Slurm) and asks first
/// (`confirm_params`, `choice`) runs after the answer, through its
/// executor, with the approved params, and succeeds only with its outputs
/// (issue #41: a `run.http` node was marked succeeded on approval with no
/// job ever sent and no output).
@Suite(.serialized, .tags(.medium)) struct ApprovedRunTests {
    final class Asking {
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
                input: { steps: "{params.steps}" }
                outputs: { out: output }
            """
        static let train = """
            kind: Train
            resources: remote
            outputs: { out: TextRef }
            params: { epochs: { type: integer, default: 1 } }
            run:
              slurm:
                command: [sh, -c, 'echo "$1" > "$0"', "{outputs.out}", "{params.epochs}"]
            """

        /// One node `n` of `kind`, asking with `await`.
        init(kind: String, asking: String, params: String = "{}") throws {
            dir = try TemporaryDirectory()
            try dir.write("wf/tools/Gen.yaml", Self.gen)
            try dir.write("wf/tools/Train.yaml", Self.train)
            try dir.write("wf/t.yaml", """
                schema: app.workflow/v2
                name: ask
                nodes:
                  - { id: n, kind: \(kind), params: \(params), await: \(asking) }
                """)
            let loaded = TemplateLoader(fileSystem: LocalFileSystem()).load(path: dir.path + "/wf/t.yaml")
            #expect(loaded.diagnostics.isEmpty, "\(loaded.diagnostics)")
            instance = dir.path + "/inst"
            try InstanceCreator().create(template: loaded, templatePath: dir.path + "/wf/t.yaml", directory: instance, title: "inst", overrides: [])
        }

        func engine(_ executor: ScriptedExecutor) -> Engine {
            Engine(options: EngineOptions(), executors: ExecutorSet([JobWork.commandKey: LocalExecutor(), "http": executor, "slurm": executor]))
        }

        /// Adds `lines` to the await file, as a person does in an editor.
        func answer(_ lines: String) throws {
            let file = instance + "/inbox/n.await.yaml"
            let text = try String(contentsOfFile: file, encoding: .utf8)
            try (text + lines).write(toFile: file, atomically: true, encoding: .utf8)
        }

        func state() throws -> NodeStateRecord? { try InstanceReader().read(instance).states["n"] }

        func record(_ run: Int) throws -> RunRecord {
            let bytes = try LocalFileSystem().readFile(instance + "/nodes/n/runs/\(run)/run.yaml", limit: 1 << 20)
            return try RunRecordCodec.decode(bytes, file: "run.yaml").get()
        }
    }

    /// What the executor was handed, by submission.
    final class Seen: @unchecked Sendable {
        let specs = Locked<[JobSpec]>([])
    }

    func executor(_ seen: Seen) -> ScriptedExecutor {
        ScriptedExecutor(script: { spec, id in
            seen.specs.locked { $0.append(spec) }
            return ScriptedExecutor.happy(spec, id)
        })
    }

    @Test func anApprovedHTTPJobIsSentWithTheApprovedParamsAndSucceedsWithItsOutput() async throws {
        let a = try Asking(kind: "Gen", asking: "{ type: confirm_params }")
        let seen = Seen()
        let ex = executor(seen)
        #expect(try await a.engine(ex).run(a.instance).exitCode == 2)
        #expect(try a.state()?.state == .awaitingUser)
        #expect(ex.calls.submits.isEmpty)
        // Approved with an edit: steps 30 → 12.
        let text = try String(contentsOfFile: a.instance + "/inbox/n.await.yaml", encoding: .utf8)
        try text.replacingOccurrences(of: "steps: 30", with: "steps: 12").appending("approve: true\n")
            .write(toFile: a.instance + "/inbox/n.await.yaml", atomically: true, encoding: .utf8)
        let outcome = try await a.engine(ex).run(a.instance)
        #expect(outcome.exitCode == 0, "\(outcome.states)")
        #expect(ex.calls.submits.count == 1)
        guard let work = seen.specs.locked({ $0.first?.work })?.payload(as: HTTPWork.self) else {
            Issue.record("no job API job was sent")
            return
        }
        #expect(work.input.first { $0.key == "steps" }?.value == .integer(12))
        #expect(try a.state()?.state == .succeeded)
        let record = try a.record(try #require(try a.state()).run)
        #expect(record.trigger == .answer && record.answer != nil)
        #expect(record.job != nil, "the run names the job it ran as")
        #expect(record.params[key: "steps"]?.value == .int(12))
        #expect(record.outputs.map(\.port) == ["out"])
        #expect(try String(contentsOfFile: a.instance + "/nodes/n/out/out.txt", encoding: .utf8) == "out of out\n")
    }

    @Test func aChoiceOnAnHTTPToolRunsItToo() async throws {
        let a = try Asking(kind: "Gen", asking: "{ type: choice, choices: [fast, slow] }")
        let seen = Seen()
        let ex = executor(seen)
        #expect(try await a.engine(ex).run(a.instance).exitCode == 2)
        try a.answer("choice: fast\n")
        #expect(try await a.engine(ex).run(a.instance).exitCode == 0)
        #expect(ex.calls.submits.count == 1)
        #expect(try a.state()?.state == .succeeded)
        #expect(try a.record(try #require(try a.state()).run).outputs.map(\.port) == ["out"])
    }

    @Test func anApprovedSlurmJobIsSubmittedToo() async throws {
        let a = try Asking(kind: "Train", asking: "{ type: confirm_params }")
        let seen = Seen()
        let ex = executor(seen)
        #expect(try await a.engine(ex).run(a.instance).exitCode == 2)
        try a.answer("approve: true\n")
        #expect(try await a.engine(ex).run(a.instance).exitCode == 0)
        #expect(ex.calls.submits.count == 1)
        guard seen.specs.locked({ $0.first?.work })?.payload(as: SlurmWork.self) != nil else {
            Issue.record("no Slurm job was submitted")
            return
        }
        #expect(try a.state()?.state == .succeeded)
    }

    /// Its job fails: the node fails — the approval is not a success.
    @Test func anApprovedJobThatFailsFailsTheNode() async throws {
        let a = try Asking(kind: "Gen", asking: "{ type: confirm_params }")
        let ex = ScriptedExecutor(script: { _, id in
            [.update(.submitted(jobID: id)), .update(.ended(.failed(NodeError(summary: "out of memory", code: "remoteFailed")), log: nil))]
        })
        #expect(try await a.engine(ex).run(a.instance).exitCode == 2)
        try a.answer("approve: true\n")
        #expect(try await a.engine(ex).run(a.instance).exitCode == 1)
        guard case .failed(let err)? = try a.state()?.state else {
            Issue.record("not failed: \(String(describing: try a.state()?.state))")
            return
        }
        #expect(err.summary.contains("out of memory"))
        #expect(!FileManager.default.fileExists(atPath: a.instance + "/nodes/n/out/out.txt"))
    }
}
