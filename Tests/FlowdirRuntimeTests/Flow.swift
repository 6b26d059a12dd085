import FlowdirCore
import FlowdirIO
import FlowdirRuntime
import FlowdirTemplates
import FlowdirTestSupport
import Foundation

/// A workflow in a temp folder, made of `Step` nodes: a tool that writes
/// its text plus its inputs, can sleep, fail, log when it starts and ends,
/// and leave a child process behind, so tests can watch the engine work.
final class Flow {
    let dir: TemporaryDirectory
    let instance: String
    var log: String { dir.path + "/times.log" }

    static let step = """
        import os, subprocess, sys, time
        text, sleep, fail, log, child, together, out, *ins = sys.argv[1:]
        node = os.environ["FLOWDIR_NODE"]
        if log: open(log, "a").write(f"start {node} {time.time()}\\n")
        # Waits (30 s at most) until `together` steps have started: steps run at
        # once overlap however slowly a loaded machine starts them.
        deadline = time.time() + 30
        while int(together) and log and time.time() < deadline and open(log).read().count("start ") < int(together):
            time.sleep(0.01)
        if child == "true": subprocess.Popen(["sleep", "60"])
        print("progress: 0.5", flush=True)
        time.sleep(float(sleep))
        data = text + "".join(open(p).read() for p in ins if p)
        if log: open(log, "a").write(f"end {node} {time.time()}\\n")
        if fail == "true":
            print("boom: failing on purpose", flush=True)
            sys.exit(3)
        open(out, "w").write(data)
        """

    static let tool = """
        kind: Step
        inputs: { a: TextRef?, b: TextRef? }
        outputs: { out: TextRef }
        params:
          text: { type: string, default: x, summary: true }
          sleep: { type: number, default: 0 }
          fail: { type: boolean, default: false }
          log: { type: string, default: "" }
          child: { type: boolean, default: false }
          together: { type: integer, default: 0 }
        run:
          command: [python3, "{tool.dir}/step.py", "{params.text}", "{params.sleep}", "{params.fail}", "{params.log}",
                    "{params.child}", "{params.together}", "{outputs.out}", "{inputs.a}", "{inputs.b}"]
        """

    /// `nodes`: id → params (as YAML flow text); `edges`: "a.out -> b.a".
    /// - Parameter clock: what the instance's first commits are made with (their time orders instances).
    init(nodes: [(String, String)], edges: [String], options: String = "", name: String = "inst", clock: FlowdirClock = .system) throws {
        dir = try TemporaryDirectory()
        try dir.write("wf/tools/Step.yaml", Self.tool)
        try dir.write("wf/tools/step.py", Self.step)
        var yaml = "schema: app.workflow/v2\nname: test\nnodes:\n"
        // Inputs that an edge feeds are declared required (the tool has them optional).
        var wired: [String: [String]] = [:]
        for e in edges {
            let target = e.split(separator: ">").last!.trimmingCharacters(in: .whitespaces).split(separator: ".")
            wired[String(target[0]), default: []].append(String(target[1]))
        }
        for (id, params) in nodes {
            let p = params.replacingOccurrences(of: "LOG", with: dir.path + "/times.log")
            let inputs = wired[id].map { ", inputs: { " + $0.map { "\($0): TextRef" }.joined(separator: ", ") + " }" } ?? ""
            yaml += "  - { id: \(id), kind: Step, params: \(p)\(inputs) }\n"
        }
        yaml += "edges:\n" + edges.map { "  - \($0)\n" }.joined()
        if !options.isEmpty { yaml += "options: \(options)\n" }
        try dir.write("wf/t.yaml", yaml)
        let loaded = TemplateLoader(fileSystem: LocalFileSystem()).load(path: dir.path + "/wf/t.yaml")
        instance = dir.path + "/" + name
        try InstanceCreator(clock: clock).create(template: loaded, templatePath: dir.path + "/wf/t.yaml", directory: instance,
                                     title: name, overrides: [])
    }

    func engine(local: Int = 8, grace: Double = 5) -> Engine {
        Engine(options: EngineOptions(machineCaps: QueueCaps(local: local, remote: 8), grace: grace))
    }

    func run(local: Int = 8, retry: [String] = [], retryFrom: Int? = nil, rerun: [String] = [], downstream: Bool = false) async throws -> RunOutcome {
        try await engine(local: local).run(instance, retry: retry, retryFrom: retryFrom, rerun: rerun, downstream: downstream)
    }

    func snapshot() throws -> InstanceSnapshot { try InstanceReader().read(instance) }
    func state(_ node: String) throws -> NodeState? { try snapshot().states[node]?.state }
    func output(_ node: String) throws -> String {
        try String(contentsOfFile: instance + "/nodes/\(node)/out/out.txt", encoding: .utf8)
    }

    func setParams(_ node: String, _ yaml: String) throws {
        try yaml.write(toFile: instance + "/nodes/\(node)/params.yaml", atomically: true, encoding: .utf8)
    }

    func runRecord(_ node: String, _ n: Int) throws -> RunRecord {
        let bytes = try LocalFileSystem().readFile(instance + "/nodes/\(node)/runs/\(n)/run.yaml", limit: 1 << 20)
        return try RunRecordCodec.decode(bytes, file: "run.yaml").get()
    }

    /// (node, start, end) from the tool's log.
    func intervals() throws -> [(String, Double, Double)] {
        var starts: [String: Double] = [:]
        var out: [(String, Double, Double)] = []
        for line in try String(contentsOfFile: log, encoding: .utf8).split(separator: "\n") {
            let p = line.split(separator: " ")
            guard p.count == 3, let t = Double(p[2]) else { continue }
            if p[0] == "start" { starts[String(p[1])] = t } else if let s = starts[String(p[1])] { out.append((String(p[1]), s, t)) }
        }
        return out
    }

    /// The most intervals overlapping at any moment.
    func maxConcurrency() throws -> Int {
        var events: [(time: Double, delta: Int)] = []
        for (_, start, end) in try intervals() {
            events.append((start, 1))
            events.append((end, -1))
        }
        // Ends before starts at the same instant: touching is not overlapping.
        events.sort { a, b in a.time != b.time ? a.time < b.time : a.delta < b.delta }
        var now = 0, best = 0
        for e in events {
            now += e.delta
            best = max(best, now)
        }
        return best
    }
}
