@testable import FlowdirIO
import FlowdirTestSupport
import Foundation
import Testing

@Suite(.tags(.medium)) struct LocalRunnerTests {
    @Test func progressLines() {
        func p(_ s: String) -> Double? { Progress.parse(Array(s.utf8)) }
        #expect(p("progress: 0.42") == 0.42)
        #expect(p("progress:0.5\r") == 0.5)
        #expect(p("PROGRESS 42%") == 0.42)
        #expect(p("Progress: 100%") == 1)
        #expect(p("progress: 1.5") == nil)
        #expect(p("progress: -1") == nil)
        #expect(p("in progress: 0.4 done") == nil)
        #expect(p("progressive 0.4") == nil)
    }

    @Test func theLogKeepsItsStartAndEndWithinTheLimit() throws {
        let dir = try TemporaryDirectory()
        let path = dir.path + "/log.txt"
        let log = BoundedLog(path: path)
        log.append(Array("FIRST LINE\n".utf8))
        let chunk = [UInt8](repeating: UInt8(ascii: "x"), count: 64 << 10)
        for _ in 0..<40 { log.append(chunk) }  // 2.5 MiB in all
        log.append(Array("\nLAST LINE\n".utf8))
        log.close()
        let text = try String(contentsOfFile: path, encoding: .utf8)
        #expect(text.hasPrefix("FIRST LINE\n"))
        #expect(text.hasSuffix("\nLAST LINE\n"))
        #expect(text.contains("bytes of output left out …]"))
        #expect(text.utf8.count <= (1 << 20) + 100)
    }

    @Test func aSmallLogIsHandedBackAsTheFileHoldsItAndALargeOneIsNot() throws {
        let dir = try TemporaryDirectory()
        // A first run: its folder and `runs/` above it are both new.
        let small = dir.path + "/runs/1/log.txt"
        let log = BoundedLog(path: small, newFolders: 2)
        log.append(Array("one\n".utf8))
        log.append(Array("two\n".utf8))
        let kept = log.close()
        #expect(kept == Array("one\ntwo\n".utf8))
        #expect(try Array(Data(contentsOf: URL(fileURLWithPath: small))) == kept)
        // The folders made from the top, also when more above are missing.
        let deep = BoundedLog(path: dir.path + "/a/b/c/log.txt", newFolders: 2)
        deep.append(Array("deep\n".utf8))
        #expect(deep.close() == Array("deep\n".utf8))
        #expect(Files.exists(dir.path + "/a/b/c/log.txt"))
        let large = BoundedLog(path: dir.path + "/runs/2/log.txt")
        large.append([UInt8](repeating: UInt8(ascii: "x"), count: BoundedLog.kept + 1))
        #expect(large.close() == nil)
        withExtendedLifetime(dir) {}
    }

    @Test func aLogIsMadeOnlyAtTheFirstOutput() throws {
        let dir = try TemporaryDirectory()
        let quiet = BoundedLog(path: dir.path + "/runs/1/log.txt", newFolders: 2)
        quiet.append([])
        // Nothing written: no folder, no file, and an empty log handed back.
        #expect(quiet.close() == [])
        #expect(!Files.exists(dir.path + "/runs"))
        #expect(quiet.close() == nil)  // closed once
        // A log that cannot be made (a file where its folder would be) loses the output, not the job.
        try Files.writeAtomically(dir.path + "/blocked", "a file\n")
        let blocked = BoundedLog(path: dir.path + "/blocked/1/log.txt", newFolders: 2)
        blocked.append(Array("lost\n".utf8))
        #expect(blocked.close() == nil)
        withExtendedLifetime(dir) {}
    }

    @Test func argvIsPassedAsItIsAndExitCodesAreReported() async throws {
        let dir = try TemporaryDirectory()
        let log = dir.path + "/log.txt"
        let job = LocalJob(argv: ["sh", "-c", "printf '%s|' \"$@\"; exit 7", "sh", "a b", "$(id)", "*"],
                           workingDirectory: dir.path, logPath: log)
        let result = await LocalRunner().run(job, cancel: CancelToken())
        #expect(result == .exited(7))
        #expect(try String(contentsOfFile: log, encoding: .utf8) == "a b|$(id)|*|")
        let missing = await LocalRunner().run(LocalJob(argv: ["no-such-program-xyz"], workingDirectory: dir.path, logPath: log),
                                              cancel: CancelToken())
        guard case .spawnFailed = missing else { Issue.record("expected a spawn failure, got \(missing)"); return }
    }

    @Test func theJobSeesThisEnvironmentWithItsOwnVariablesOnTop() async throws {
        let dir = try TemporaryDirectory()
        let log = dir.path + "/log.txt"
        let home = ProcessInfo.processInfo.environment["HOME"] ?? ""
        let job = LocalJob(argv: ["sh", "-c", "printf '%s|%s|%s' \"$FLOWDIR_X\" \"$HOME\" \"$(env | grep -c '^FLOWDIR_X=')\""],
                           workingDirectory: dir.path, environment: ["FLOWDIR_X": "a b=c"], logPath: log)
        #expect(await LocalRunner().run(job, cancel: CancelToken()) == .exited(0))
        #expect(try String(contentsOfFile: log, encoding: .utf8) == "a b=c|\(home)|1")
        let overridden = LocalRunner.environment(["HOME": "/elsewhere"])
        #expect(overridden.filter { $0.starts(with: Array("HOME=".utf8)) } == [Array("HOME=/elsewhere".utf8) + [0]])
    }

    /// The threads a job's end goes through ask a short time slice, so that
    /// they take a CPU from a running job when they wake, instead of
    /// queueing behind it; the jobs themselves keep the default.
    @Test func theWatchingThreadsAskAShortSliceAndJobsDoNot() async throws {
        let dir = try TemporaryDirectory()
        let log = dir.path + "/log.txt"
        let job = LocalJob(argv: ["sh", "-c", "sed -n 's/^se.slice *: *//p' /proc/$$/sched"], workingDirectory: dir.path, logPath: log)
        #expect(await LocalRunner().run(job, cancel: CancelToken()) == .exited(0))
        let child = Int(try String(contentsOfFile: log, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines))
        func slice(_ task: String) -> Int? {
            guard let text = try? String(contentsOfFile: "/proc/self/task/\(task)/sched", encoding: .utf8),
                  let line = text.split(separator: "\n").first(where: { $0.hasPrefix("se.slice") }) else { return nil }
            return Int(line.split(separator: ":").last!.trimmingCharacters(in: .whitespaces))
        }
        let tasks = try FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")
        let watching = tasks.filter { task in
            let name = (try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8)) ?? ""
            return ChildWatch.threadNames.contains(name.trimmingCharacters(in: .newlines))
        }
        #expect(watching.count == 1 + ChildWatch.spawners)
        // Custom slices are Linux 6.12's (EEVDF): older kernels ignore the request.
        var name = utsname()
        uname(&name)
        let release = withUnsafeBytes(of: &name.release) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        let version = release.split(separator: ".").prefix(2).compactMap { Int($0.prefix { $0.isNumber }) }
        if version.count == 2, (version[0], version[1]) >= (6, 12) {
            for task in watching { #expect(slice(task) == Int(ChildWatch.slice), "thread \(task)") }
        }
        // Reset when a job is started (SCHED_FLAG_RESET_ON_FORK): never the watchers' short slice.
        if let child { #expect(child != Int(ChildWatch.slice)) }
        withExtendedLifetime(dir) {}
    }

    /// flowdir keeps the output pipe's write end until the job is reaped
    /// (its exit is seen by its pidfd alone): a tool that closes its output
    /// early and goes on still has what it wrote, and its end is seen.
    @Test func aToolThatClosesItsOutputEarlyIsStillSeenToEnd() async throws {
        let dir = try TemporaryDirectory()
        let log = dir.path + "/log.txt"
        let job = LocalJob(argv: ["sh", "-c", "echo before; exec >&- 2>&-; sleep 0.2; exit 3"], workingDirectory: dir.path, logPath: log)
        #expect(await LocalRunner().run(job, cancel: CancelToken()) == .exited(3))
        #expect(try String(contentsOfFile: log, encoding: .utf8) == "before\n")
        withExtendedLifetime(dir) {}
    }

    @Test func programsAreFoundOnPathAsExecvpWould() throws {
        let dir = try TemporaryDirectory()
        for sub in ["a", "b", "c", "w/bin"] { try Files.makeDirectories(dir.path + "/" + sub) }
        try Files.makeDirectories(dir.path + "/a/tool")                         // a folder: skipped
        try Files.writeAtomically(dir.path + "/b/tool", "#!/bin/sh\n")   // not executable: skipped
        try Files.writeAtomically(dir.path + "/c/tool", "#!/bin/sh\n")
        chmod(dir.path + "/c/tool", 0o755)
        try Files.writeAtomically(dir.path + "/w/bin/rel", "#!/bin/sh\n")
        chmod(dir.path + "/w/bin/rel", 0o755)
        let path = "\(dir.path)/a:\(dir.path)/b:\(dir.path)/c:bin"
        #expect(ExecutablePath.find("tool", path: path, from: dir.path + "/w") == dir.path + "/c/tool")
        #expect(ExecutablePath.find("rel", path: path, from: dir.path + "/w") == dir.path + "/w/bin/rel")
        #expect(ExecutablePath.find("missing", path: path, from: dir.path) == nil)
        #expect(ExecutablePath.find("sh", from: dir.path) != nil)
    }

    @Test func programsFoundAreRememberedForASecondOnly() throws {
        let dir = try TemporaryDirectory()
        for sub in ["a", "c", "w/bin", "v/bin"] { try Files.makeDirectories(dir.path + "/" + sub) }
        func install(_ path: String) throws {
            try Files.writeAtomically(dir.path + "/" + path, "#!/bin/sh\n")
            chmod(dir.path + "/" + path, 0o755)
        }
        try install("c/tool")
        let cache = ProgramCache(lifetime: 1)
        let path = "\(dir.path)/a:\(dir.path)/c"
        #expect(cache.find("tool", path: path, from: "/", now: 100) == dir.path + "/c/tool")
        try install("a/tool")  // installed earlier on PATH meanwhile
        #expect(cache.find("tool", path: path, from: "/", now: 100.5) == dir.path + "/c/tool")
        #expect(cache.find("tool", path: path, from: "/", now: 101.5) == dir.path + "/a/tool")
        // Another PATH finds its own, and the first its own again.
        #expect(cache.find("tool", path: "\(dir.path)/c", from: "/", now: 101.6) == dir.path + "/c/tool")
        #expect(cache.find("tool", path: path, from: "/", now: 101.7) == dir.path + "/a/tool")
        // A relative entry depends on the job's folder: never remembered.
        try install("w/bin/rel")
        try install("v/bin/rel")
        #expect(cache.find("rel", path: "bin", from: dir.path + "/w", now: 200) == dir.path + "/w/bin/rel")
        #expect(cache.find("rel", path: "bin", from: dir.path + "/v", now: 200) == dir.path + "/v/bin/rel")
    }

    @Test func eachJobGetsItsOwnValuesOverTheSameInheritedRows() {
        let a = LocalRunner.environment(["FLOWDIR_NODE": "a", "HOME": "/h1"])
        let b = LocalRunner.environment(["FLOWDIR_NODE": "b", "HOME": "/h2"])
        let c = LocalRunner.environment(["FLOWDIR_RUN": "3"])
        func rows(_ env: [[UInt8]], _ name: String) -> [String] {
            env.filter { $0.starts(with: Array((name + "=").utf8)) }.map { String(decoding: $0.dropLast(), as: UTF8.self) }
        }
        #expect(rows(a, "FLOWDIR_NODE") == ["FLOWDIR_NODE=a"] && rows(a, "HOME") == ["HOME=/h1"])
        #expect(rows(b, "FLOWDIR_NODE") == ["FLOWDIR_NODE=b"] && rows(b, "HOME") == ["HOME=/h2"])
        #expect(rows(c, "FLOWDIR_NODE").isEmpty && rows(c, "FLOWDIR_RUN") == ["FLOWDIR_RUN=3"])
        #expect(rows(c, "HOME") == rows(LocalRunner.inherited, "HOME"))
        #expect(a.allSatisfy { $0.last == 0 } && c.allSatisfy { $0.last == 0 })
    }

    /// A job that waited for its `sleep` would never end: the time limit is a guard against that hang, not a speed check.
    @Test(.timeLimit(.minutes(10))) func aJobThatIgnoresSIGTERMIsKilledAfterTheGrace() async throws {
        let dir = try TemporaryDirectory()
        let job = LocalJob(argv: ["sh", "-c", "trap '' TERM; echo started $$; sleep 3600 & wait"], workingDirectory: dir.path,
                           logPath: dir.path + "/log.txt", grace: 0.5)
        let cancel = CancelToken()
        // The grace is timed on a clock the test moves.
        let clock = ManualClock()
        async let result = LocalRunner(clock: clock.flowdirClock).run(job, cancel: cancel)
        // Only once the trap is set (it says so) is SIGTERM ignored.
        var pid: Int32?
        await Eventually.until {
            let log = (try? String(contentsOfFile: dir.path + "/log.txt", encoding: .utf8)) ?? ""
            pid = log.split(separator: " ").dropFirst().first.flatMap { Int32($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
            return pid != nil
        }
        cancel.cancel()
        // SIGTERM sent and ignored: the job runs on through the grace.
        try await clock.waitForSleepers(1)
        clock.advance(by: .milliseconds(499))
        #expect(clock.sleeperCount == 1)
        #expect(ProcessTable.isAlive(try #require(pid)))
        // The grace runs out: SIGKILL.
        clock.advance(by: .milliseconds(1))
        #expect(await result == .signaled(SIGKILL))
    }
}
