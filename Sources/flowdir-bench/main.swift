// flowdir-bench: measurements and stress drivers for the store, kept out of
// the flowdir binary. Used by Benchmarks/commit.sh and by the kill -9 tests.
//
//   flowdir-bench commit-timing --files N --history H [--samples S]
//   flowdir-bench commit-burst DIR --count N
//   flowdir-bench spawn-timing [--count N] [--parallel P] [--touch DIR] [--raw | --swift-subprocess]
//   flowdir-bench open-timing INSTANCE [--count N]
//   flowdir-bench codec-timing [--count N]
//   flowdir-bench group-commit [--nodes N] [--rounds R]
#if canImport(Glibc)
import Glibc
#endif
import FlowdirCore
import FlowdirIO
import FlowdirTemplates

func argument(_ name: String, default value: Int) -> Int {
    guard let i = CommandLine.arguments.firstIndex(of: name), i + 1 < CommandLine.arguments.count,
          let v = Int(CommandLine.arguments[i + 1]) else { return value }
    return v
}

func now() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}

func fail(_ message: String) -> Never {
    let text = "flowdir-bench: \(message)\n"
    _ = text.withCString { write(2, $0, strlen($0)) }
    exit(1)
}

let stateText = { (i: Int) in "state: succeeded\nrun: \(i)\nupdatedAt: 2026-11-22T10:00:00Z\n" }

/// One instance with `files` files spread as a real one is: nodes with a few
/// runs each, so no directory grows huge.
func populate(_ store: InstanceStore, files: Int) throws {
    var changes: [InstanceStore.Change] = [.write("instance.yaml", "id: bench\n"), .write("workflow.yaml", "nodes: []\n")]
    let perNode = argument("--files-per-node", default: files <= 100 ? 5 : 50)
    var node = 0
    while changes.count < files {
        let id = "n\(node)"
        changes.append(.write("nodes/\(id)/params.yaml", "steps: \(node)\n"))
        changes.append(.write("nodes/\(id)/state.yaml", stateText(0)))
        var run = 1
        while changes.count < files, (run - 1) * 2 + 2 < perNode {
            changes.append(.write("nodes/\(id)/runs/\(run)/run.yaml", "run: \(run)\n"))
            changes.append(.write("nodes/\(id)/runs/\(run)/log.txt", "ok \(node) \(run)\n"))
            run += 1
        }
        node += 1
    }
    try store.commit(Array(changes.prefix(files)), message: CommitMessage(summary: "populate", event: "bench"))
}

let args = CommandLine.arguments
guard args.count >= 2 else { fail("usage: flowdir-bench commit-timing|commit-burst …") }

do {
    switch args[1] {
    case "commit-timing":
        let files = argument("--files", default: 50)
        let history = argument("--history", default: 10)
        let samples = argument("--samples", default: 200)
        let flushEach = CommandLine.arguments.contains("--flush-index-each")
        let dir = (getenv("FLOWDIR_BENCH_DIR").map { String(cString: $0) } ?? "/tmp") + "/flowdir-bench-\(getpid())"
        defer { try? Files.removeTree(dir) }
        let store = try InstanceStore.create(at: dir)
        try populate(store, files: files)
        try store.flushIndex()
        let message = CommitMessage(summary: "n0 → succeeded", event: "bench",
                                    transitions: [Transition(node: "n0", from: "runningLocal", to: "succeeded", run: 1)])
        let historyStart = now()
        for i in 0..<max(0, history - 1) {
            try store.commit([.write("nodes/n1/state.yaml", stateText(i))], message: message)
        }
        let historySeconds = now() - historyStart
        var times: [Double] = []
        for i in 0..<samples {
            let t0 = now()
            try store.commit([.write("nodes/n0/state.yaml", stateText(i + 1))], message: message)
            if flushEach { try store.flushIndex() }
            times.append(now() - t0)
        }
        times.sort()
        let median = times[times.count / 2] * 1000, p90 = times[times.count * 9 / 10] * 1000
        print("files=\(files) history=\(history) median_ms=\(String(format3: median)) p90_ms=\(String(format3: p90)) history_build_s=\(String(format3: historySeconds))")
    case "commit-burst":
        guard args.count >= 3 else { fail("usage: flowdir-bench commit-burst DIR --count N") }
        let dir = args[2]
        let count = argument("--count", default: 1000)
        // A test kills this process; should the test itself die first, this
        // dies with it rather than fill the disk with commits no one reads.
        let parent = getppid()
        let store = Files.exists(dir + "/.git") ? try InstanceStore.open(dir, purpose: "burst", lockTimeout: 10)
                                                 : try InstanceStore.create(at: dir)
        for i in 0..<count {
            if getppid() != parent { fail("commit-burst: the process that started this is gone") }
            let node = "n\(i % 7)"
            let id = try store.commit([.write("nodes/\(node)/state.yaml", stateText(i)),
                                       .write("nodes/\(node)/runs/\(i)/run.yaml", "run: \(i)\n")],
                                      message: CommitMessage(summary: "burst \(i)", event: "bench"))
            // Printed only once the commit is complete: the test checks each survives.
            if let id { let line = id.hex + "\n"; _ = line.withCString { write(1, $0, strlen($0)) } }
        }
    case "spawn-timing":
        // Spawns of `true` (or, with --touch DIR, `touch DIR/fN`), --parallel
        // at a time: the runner's own cost per job, without the engine.
        let count = argument("--count", default: 300)
        let parallel = argument("--parallel", default: 1)
        let touchDir = CommandLine.arguments.firstIndex(of: "--touch").map { CommandLine.arguments[$0 + 1] }
        let runner = LocalRunner()
        let t0 = now()
        if CommandLine.arguments.contains("--raw") {
            // The same jobs by bare posix_spawn + waitpid on `parallel` threads:
            // what spawning costs without swift-subprocess (or a log).
            rawSpawns(count: count, parallel: parallel, touchDir: touchDir)
            let total = now() - t0
            print("posix_spawn: \(count) jobs, \(parallel) at a time: \(String(format3: total)) s, \(String(format3: total / Double(count) * 1000)) ms per job")
            break
        }
        let viaSubprocess = CommandLine.arguments.contains("--swift-subprocess")
        let sem = DispatchSemaphoreLike()
        Task.detached {  // not the main actor: the main thread waits below
            await withTaskGroup(of: Void.self) { group in
                for worker in 0..<parallel {
                    group.addTask {
                        for i in stride(from: worker, to: count, by: parallel) {
                            let argv = touchDir.map { ["touch", "\($0)/f\(i)"] } ?? ["true"]
                            if viaSubprocess {
                                _ = await SwiftSubprocessRunner.run(touchDir == nil ? "/bin/true" : "/usr/bin/touch", Array(argv.dropFirst()),
                                                                    directory: "/tmp", logPath: "/tmp/flowdir-bench-spawn-\(worker).log")
                                continue
                            }
                            _ = await runner.run(LocalJob(argv: argv, workingDirectory: "/tmp",
                                                          logPath: "/tmp/flowdir-bench-spawn-\(worker).log"), cancel: CancelToken())
                        }
                    }
                }
            }
            sem.signal()
        }
        sem.wait()
        let total = now() - t0
        print("\(viaSubprocess ? "swift-subprocess" : "runner"): \(count) jobs, \(parallel) at a time: \(String(format3: total)) s, \(String(format3: total / Double(count) * 1000)) ms per job")
    case "open-timing":
        // What opening an instance costs before its first job can start, in
        // this process (no start-up of its own): its workflow loaded
        // (parsed, decoded, validated), and the whole instance read.
        guard args.count >= 3 else { fail("usage: flowdir-bench open-timing INSTANCE [--count N]") }
        let path = args[2]
        let count = argument("--count", default: 20)
        let reader = InstanceReader()
        let record = try reader.read(instanceRecordOnly: path)
        let loader = TemplateLoader(fileSystem: LocalFileSystem())
        let dirs = record.map { reader.toolDirectories(path, $0) } ?? []
        func median(_ body: () throws -> Void) rethrows -> Double {
            var times: [Double] = []
            for _ in 0..<count { let t = now(); try body(); times.append(now() - t) }
            return times.sorted()[count / 2] * 1000
        }
        let load = median { _ = loader.load(path: path + "/workflow.yaml", toolDirectories: dirs) }
        // From the instance's workflow cache (written by the first, if none).
        let cached = median { _ = TemplateCache.load(instance: path, workflowFile: path + "/workflow.yaml", toolDirectories: dirs, loader: loader) }
        let read = try median { _ = try reader.read(path) }
        print("workflow load: \(String(format3: load)) ms, from its cache: \(String(format3: cached)) ms;  instance read: \(String(format3: read)) ms  (medians of \(count))")
    case "codec-timing":
        // What writing a finished run's run.yaml and its node's state.yaml
        // costs (the store's thread writes one of each a step), as a
        // 1,000-step run of `touch` makes them.
        let count = argument("--count", default: 20_000)
        let blob = ObjectID.emptyBlob.hex
        var record = RunRecord(run: 1, node: "n5", kind: "Touch", trigger: .auto, params: [],
                               inputs: [InputUse(port: "a", node: "n0", sourcePort: "out", run: 1, blob: blob)],
                               startedAt: Timestamp(seconds: 1_795_000_000), host: "vm", user: "root")
        record.outputs = [OutputRecord(port: "out", blob: "3" + blob.dropFirst(), size: 0, type: .file, file: "out/out.bin")]
        record.command = ["touch", "/dev/shm/dag/inst/.flowdir/work/n5.1/out.bin"]
        record.finishedAt = Timestamp(seconds: 1_795_000_001)
        record.exitCode = 0
        let state = NodeStateRecord(state: .succeeded, run: 1, updatedAt: Timestamp(seconds: 1_795_000_001))
        var bytes = 0
        let t0 = now()
        for _ in 0..<count { bytes &+= RunRecordCodec.encodeBytes(record).count }
        let t1 = now()
        for _ in 0..<count { bytes &+= InstanceCodec.encode(state).utf8.count }
        let t2 = now()
        print("run.yaml: \(String(format3: (t1 - t0) / Double(count) * 1e6)) µs;  state.yaml: \(String(format3: (t2 - t1) / Double(count) * 1e6)) µs  (\(count) each, \(bytes) bytes)")
    case "group-commit":
        // One held group of `flowdir run` (a 1,000-step run makes ~15): each
        // of --nodes steps' state.yaml, run.yaml, empty log and output, and
        // three transitions, committed as one on top of an instance of that
        // many nodes. The store's thread does this for every step of a run.
        let nodes = argument("--nodes", default: 200)
        let rounds = argument("--rounds", default: 5)
        var times: [Double] = []
        for round in 0..<rounds {
            let dir = (getenv("FLOWDIR_BENCH_DIR").map { String(cString: $0) } ?? "/tmp") + "/flowdir-bench-\(getpid())-\(round)"
            defer { try? Files.removeTree(dir) }
            let store = try InstanceStore.create(at: dir)
            var setup: [InstanceStore.Change] = [.write("instance.yaml", "id: bench\n")]
            for i in 0..<nodes {
                setup.append(.write("nodes/n\(i)/params.yaml", "{}\n"))
                setup.append(.write("nodes/n\(i)/state.yaml", "state: ready\nrun: 0\nupdatedAt: 2026-11-22T10:00:00Z\n"))
            }
            try store.commit(setup, message: CommitMessage(summary: "setup", event: "bench"))
            var changes: [InstanceStore.Change] = []
            var transitions: [Transition] = []
            let at = Timestamp(seconds: 1_795_000_000)
            for i in 0..<nodes {
                let id = "n\(i)", out = Array("out \(i)\n".utf8)
                var record = RunRecord(run: 1, node: id, kind: "Touch", trigger: .auto, params: [], inputs: [], startedAt: at, host: "vm", user: "root")
                record.outputs = [OutputRecord(port: "out", blob: GitRepository.blobID(of: out).hex, size: out.count, type: .file, file: "out/out.bin")]
                record.command = ["touch", "\(dir)/.flowdir/work/\(id).1/out.bin"]
                record.finishedAt = at
                record.exitCode = 0
                let state = NodeStateRecord(state: .succeeded, run: 1, updatedAt: at)
                let finished = record
                changes.append(.encode("nodes/\(id)/runs/1/run.yaml", bytes: { RunRecordCodec.encodeBytes(finished) }))
                changes.append(.write("nodes/\(id)/runs/1/log.txt", []))
                try Files.makeDirectories(dir + "/nodes/\(id)/out")
                try Files.writeAtomically(dir + "/nodes/\(id)/out/out.bin", out)
                changes.append(.placed("nodes/\(id)/out/out.bin", out, blob: GitRepository.blobID(of: out)))
                changes.append(.encode("nodes/\(id)/state.yaml") { InstanceCodec.encode(state) })
                transitions += [Transition(node: id, from: "ready", to: "runningLocal", run: 1),
                                Transition(node: id, from: "runningLocal", to: "succeeded", run: 1)]
            }
            let message = CommitMessage(summary: "\(nodes) steps", event: "finish", transitions: transitions)
            let t0 = now()
            try store.commit(changes, message: message)
            times.append(now() - t0)
            try store.close()
        }
        times.sort()
        let median = times[times.count / 2]
        print("group of \(nodes) steps: \(String(format3: median * 1000)) ms, \(String(format3: median / Double(nodes) * 1e6)) µs a step  (median of \(rounds))")
    default:
        fail("unknown command \(args[1])")
    }
} catch {
    fail("\(error)")
}

extension String {
    init(format3 v: Double) {
        let r = (v * 1000).rounded() / 1000
        self = "\(r)"
    }
}

/// Waits for a task from top-level synchronous code.
final class DispatchSemaphoreLike: @unchecked Sendable {
    // At fixed addresses of their own (see FlowdirIO's `BackgroundLane`).
    private let m = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let c = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private var done = false
    init() { pthread_mutex_init(m, nil); pthread_cond_init(c, nil) }
    func signal() { pthread_mutex_lock(m); done = true; pthread_cond_signal(c); pthread_mutex_unlock(m) }
    func wait() { pthread_mutex_lock(m); while !done { pthread_cond_wait(c, m) }; pthread_mutex_unlock(m) }
}

/// `count` jobs by posix_spawn + waitpid, `parallel` threads at a time.
func rawSpawns(count: Int, parallel: Int, touchDir: String?) {
    let path = touchDir == nil ? "/bin/true" : "/usr/bin/touch"
    var threads: [pthread_t] = []
    final class Work { let worker: Int, parallel: Int, count: Int, path: String, dir: String?
        init(_ w: Int, _ p: Int, _ c: Int, _ path: String, _ d: String?) { worker = w; parallel = p; count = c; self.path = path; dir = d } }
    for worker in 0..<parallel {
        let work = Unmanaged.passRetained(Work(worker, parallel, count, path, touchDir)).toOpaque()
        var thread = pthread_t()
        pthread_create(&thread, nil, { raw in
            let work = Unmanaged<Work>.fromOpaque(raw!).takeRetainedValue()
            for i in stride(from: work.worker, to: work.count, by: work.parallel) {
                let args = [work.path] + (work.dir.map { ["\($0)/r\(i)"] } ?? [])
                var cargs = args.map { strdup($0) } + [nil]
                var pid: pid_t = 0
                if posix_spawn(&pid, work.path, nil, nil, &cargs, environ) == 0 {
                    var status: Int32 = 0
                    waitpid(pid, &status, 0)
                }
                for p in cargs { free(p) }
            }
            return nil
        }, work)
        threads.append(thread)
    }
    for t in threads { pthread_join(t, nil) }
}
