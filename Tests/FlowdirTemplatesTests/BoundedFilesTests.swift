import FlowdirCore
@testable import FlowdirTemplates
import FlowdirTestSupport
import Testing

/// Numbers in the files flowdir reads — the config, state.yaml, run.yaml,
/// await files — are bounded where they are read: an absurd value is an
/// error naming the key (or, for a hint like progress, left out), never a
/// trap later in arithmetic (issue #41).
@Suite(.tags(.small)) struct BoundedFilesTests {
    func config(_ text: String) -> Result<FlowdirConfig, Diagnostic> {
        ConfigDecoder.decode(Array(text.utf8), file: "/c/config.yaml", home: "/h")
    }

    func refused(_ text: String, naming key: String, _ also: String? = nil) {
        guard case .failure(let d) = config(text) else {
            Issue.record("taken: \(text)")
            return
        }
        #expect(d.message.contains(key), "\(d.message)")
        if let also { #expect(d.message.contains(also), "\(d.message)") }
    }

    @Test func absurdSizesAreRefusedByName() {
        refused("answerSizeLimit: 1e30KB\n", naming: "answerSizeLimit")
        refused("answerSizeLimit: 99999999999999999999999GB\n", naming: "answerSizeLimit")
        refused("answerSizeLimit: infMB\n", naming: "answerSizeLimit")
        refused("answerSizeLimit: 2TB\n", naming: "answerSizeLimit", "1TB")
        refused("endpoints:\n  gpu: { url: http://gpu:1/v1, inlineLimit: 1e300 }\n", naming: "inlineLimit")
        refused("endpoints:\n  gpu: { url: http://gpu:1/v1, inlineLimit: -1 }\n", naming: "inlineLimit")
        #expect((try? config("answerSizeLimit: 1.5GB\n").get())?.answerSizeLimit == 1_610_612_736)
        #expect((try? config("answerSizeLimit: 512KB\n").get())?.answerSizeLimit == 524_288)
        #expect((try? config("answerSizeLimit: 1048576\n").get())?.answerSizeLimit == 1_048_576)
    }

    @Test func absurdDurationsAndCountsAreRefusedByName() {
        refused("hookTimeout: 1e300\n", naming: "hookTimeout", "100 years")
        refused("hookTimeout: 99999999999999999999s\n", naming: "hookTimeout", "100 years")
        refused("slurm: { pollInterval: .inf }\n", naming: "slurm.pollInterval")
        refused("sync: { every: PT99999999999999999H }\n", naming: "sync.every", "100 years")
        refused("sync: { lease: 1e19 }\n", naming: "sync.lease")
        refused("endpoints:\n  gpu: { url: http://gpu:1/v1, pollInterval: 1e300 }\n", naming: "pollInterval", "100 years")
        refused("endpoints:\n  gpu: { url: http://gpu:1/v1, requestTimeout: .nan }\n", naming: "requestTimeout")
        refused("endpoints:\n  gpu: { url: http://gpu:1/v1, retryDelays: [30s, 1e300] }\n", naming: "retryDelays")
        refused("endpoints:\n  gpu: { url: http://gpu:1/v1, delayScale: 1e300 }\n", naming: "delayScale")
        refused("endpoints:\n  gpu: { url: http://gpu:1/v1, maxRequestsPerMinute: 9223372036854775807 }\n", naming: "maxRequestsPerMinute")
        refused("concurrency: { local: 9223372036854775807 }\n", naming: "concurrency.local")
        let ok = try? config("endpoints:\n  gpu: { url: http://gpu:1/v1, pollInterval: 10s, retryDelays: [30, 2m] }\n").get()
        #expect(ok?.endpoints["gpu"]?.pollInterval == 10)
        #expect(ok?.endpoints["gpu"]?.retryDelays == [30, 120])
    }

    @Test func aTemplatesCountsAreBounded() {
        let fs = InMemoryFileSystem(["t.yaml": """
            schema: app.workflow/v2
            name: Caps
            nodes:
              - { id: a, kind: Choice, outputs: { x: JSONRef }, await: { type: choice, choices: [x] } }
            options: { concurrency: { local: 9223372036854775807, remote: 2 } }
            """])
        let loaded = TemplateLoader(fileSystem: fs).load(path: "t.yaml")
        #expect(!loaded.isValid)
        #expect(loaded.diagnostics.contains { $0.message.contains("at most 1000000") && $0.location?.line == 5 }, "\(loaded.diagnostics)")
    }

    @Test func aStateFilesRunNumberIsBounded() {
        let doc = try! InstanceCodec.document(Array("state: succeeded\nrun: 9223372036854775807\nupdatedAt: 2026-01-01T00:00:00Z\n".utf8),
                                              file: "nodes/a/state.yaml").get()
        #expect(throws: Diagnostic.self) { try InstanceCodec.decodeState(doc, file: "nodes/a/state.yaml") }
        do {
            _ = try InstanceCodec.decodeState(doc, file: "nodes/a/state.yaml")
        } catch {
            #expect(error.message.contains("run: 9223372036854775807"), "\(error.message)")
            #expect(error.location?.line == 2)
        }
    }

    @Test func progressOutsideZeroToOneIsNoProgress() throws {
        for bad in ["1e300", ".inf", ".nan", "-1", "2"] {
            let doc = try InstanceCodec.document(Array("state: runningLocal\nrun: 1\nprogress: \(bad)\nupdatedAt: 2026-01-01T00:00:00Z\n".utf8),
                                                 file: "s").get()
            #expect(try InstanceCodec.decodeState(doc, file: "s").progress == nil, "\(bad)")
        }
    }

    @Test func aRunRecordsNumbersAreBounded() {
        let base = "run: 1\nnode: a\nkind: K\ntrigger: auto\nparams: {}\ninputs: {}\noutputs: {}\nstartedAt: 2026-01-01T00:00:00Z\n"
        // An exit code past Int32 was a trap on the full decoder's path.
        let huge = base + "exitCode: 99999999999\nhost: h\nuser: u\n"
        let r = try? RunRecordCodec.decode(Array(huge.utf8), file: "run.yaml").get()
        #expect(r != nil && r?.exitCode == nil)
        let farRun = base.replacingOccurrences(of: "run: 1\n", with: "run: 9223372036854775807\n") + "host: h\nuser: u\n"
        guard case .failure(let d) = RunRecordCodec.decode(Array(farRun.utf8), file: "run.yaml") else {
            Issue.record("a run number past every run was taken")
            return
        }
        #expect(d.message.contains("9223372036854775807"), "\(d.message)")
    }

    @Test func aSnoozeCountIsWithinTheLimit() throws {
        let text = """
            id: x
            node: pick
            type: select_asset
            createdAt: 2026-01-01T00:00:00Z
            snooze: { until: null, count: -9223372036854775808 }
            """
        #expect(try AwaitCodec.decode(Array(text.utf8), file: "a").get().snoozeCount == 0)
        let many = text.replacingOccurrences(of: "-9223372036854775808", with: "9223372036854775807")
        #expect(try AwaitCodec.decode(Array(many.utf8), file: "a").get().snoozeCount == AwaitPolicy.maxSnoozes)
    }
}
