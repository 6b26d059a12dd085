@testable import FlowdirIO
import FlowdirTestSupport
import Foundation
import Testing

/// How a local job's process is started and ended (`Spawn`, `ChildWatch`):
/// what it inherits, when its end is seen, and that nothing of it is left.
@Suite(.tags(.medium)) struct JobProcessTests {
    /// How the job ended, and how long after its start that was seen: timed
    /// where its end is reported (the watch thread), not when this task
    /// resumes, which waits for a pool thread the suite's other tests may hold.

    private func log(_ dir: TemporaryDirectory, _ name: String = "log.txt") throws -> String {
        try String(contentsOfFile: dir.path + "/" + name, encoding: .utf8)
    }

    @Test func theJobGetsNoDescriptorOfOursAndDefaultSignals() async throws {
        let dir = try TemporaryDirectory()
        // A descriptor of ours without close-on-exec, and a signal we ignore:
        // neither may reach the job (a service ignores SIGTERM to handle it).
        let stray = Glibc.open(dir.path + "/stray", O_WRONLY | O_CREAT, 0o644)
        defer { Glibc.close(stray) }
        let old = signal(SIGUSR2, SIG_IGN)
        defer { signal(SIGUSR2, old) }
        let job = LocalJob(argv: ["sh", "-c", "ls -1 /proc/self/fd | tr '\\n' ' '; grep -E '^Sig(Ign|Blk)' /proc/self/status"],
                           workingDirectory: dir.path, logPath: dir.path + "/log.txt")
        #expect(await LocalRunner().run(job, cancel: CancelToken()) == .exited(0))
        let text = try log(dir)
        #expect(text.hasPrefix("0 1 2 3 "), "fds: \(text)")  // 3 is ls's own look at the folder
        // Every signal at its default, glibc's two internal ones (32, 33) as well.
        #expect(text.contains("SigIgn:\t0000000000000000"), "\(text)")
        #expect(text.contains("SigBlk:\t0000000000000000"), "\(text)")
    }

    @Test func theJobRunsInItsFolderInAGroupOfItsOwnWithNothingOnStdin() async throws {
        let dir = try TemporaryDirectory()
        let job = LocalJob(argv: ["sh", "-c", "pwd; echo $$; cut -d' ' -f5 /proc/$$/stat; cat; echo end"],
                           workingDirectory: dir.path, logPath: dir.path + "/log.txt")
        #expect(await LocalRunner().run(job, cancel: CancelToken()) == .exited(0))
        let lines = try log(dir).split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        let expected = [dir.path, "", "", "end"]
        #expect(lines.count == 4, "\(lines)")
        if lines.count == 4 {
            #expect(lines[0] == expected[0] && lines[3] == expected[3])
            #expect(lines[1] == lines[2], "it leads a group of its own")
        }
    }

    /// Were it to wait for the grandchild, it would hang: the time limit guards against that, it is no speed check.
    @Test(.timeLimit(.minutes(10))) func theJobEndsWithItsLeaderEvenIfAGrandchildHoldsItsOutput() async throws {
        let dir = try TemporaryDirectory()
        // The background sleep keeps stdout open for an hour: the job is over
        // when sh exits, and the sleep goes with it (same group).
        let job = LocalJob(argv: ["sh", "-c", "sleep 3600 & echo $!"], workingDirectory: dir.path, logPath: dir.path + "/log.txt")
        let end = await LocalRunner().run(job, cancel: CancelToken())
        #expect(end == .exited(0))
        let pid = try #require(Int32(try log(dir).trimmingCharacters(in: .whitespacesAndNewlines)))
        // Killed: gone, or a zombie nobody reaps (PID 1 here does not).
        var alive = true
        await Eventually.until {
            let stat = (try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)) ?? ""
            alive = !stat.isEmpty && !stat.contains(") Z ")
            return !alive
        }
        #expect(!alive, "the background sleep \(pid) outlived its job")
    }

    @Test func progressArrivesWhileTheJobRunsAndOutputIsKeptWhole() async throws {
        let dir = try TemporaryDirectory()
        let seen = Locked<[Double]>([])
        // More than a pipe holds (64 KiB) before and after, so the job blocks unless read as it goes.
        // Live, not at the end: after its first progress the job waits for the file the test writes
        // once that progress has reached it (a minute at most, then it fails with code 7).
        let job = LocalJob(argv: ["sh", "-c", "head -c 200000 /dev/zero | tr '\\0' x; echo; echo progress: 0.5; "
                                    + "i=0; while [ ! -e seen ] && [ $i -lt 6000 ]; do sleep 0.01; i=$((i+1)); done; [ -e seen ] || exit 7; "
                                    + "echo 'PROGRESS 90%'; head -c 100000 /dev/zero | tr '\\0' y"],
                           workingDirectory: dir.path, logPath: dir.path + "/log.txt")
        let seenFile = dir.path + "/seen"
        let end = await LocalRunner().run(job, cancel: CancelToken(), onProgress: { p in
            seen.locked { $0.append(p) }
            _ = FileManager.default.createFile(atPath: seenFile, contents: nil)
        })
        #expect(end == .exited(0), "7: the first progress had not reached the test while the job ran")
        #expect(seen.locked { $0 } == [0.5, 0.9])
        let text = try log(dir)
        let expected = 200_000 + 1 + 14 + 13 + 100_000
        #expect(text.utf8.count == expected)
        #expect(text.hasPrefix("xxx") && text.hasSuffix("yyy"))
    }

    @Test func manyJobsAtOnceEachGetTheirOwnOutputAndCode() async throws {
        let dir = try TemporaryDirectory()
        let runner = LocalRunner()
        let path = dir.path
        let ends = await withTaskGroup(of: (Int, LocalTermination).self) { group in
            for n in 0..<60 {
                group.addTask {
                    let job = LocalJob(argv: ["sh", "-c", "echo job \(n); exit \(n % 7)"], workingDirectory: path,
                                       logPath: path + "/log\(n).txt")
                    return (n, await runner.run(job, cancel: CancelToken()))
                }
            }
            var all: [Int: LocalTermination] = [:]
            for await (n, end) in group { all[n] = end }
            return all
        }
        for n in 0..<60 {
            #expect(ends[n] == .exited(Int32(n % 7)))
            #expect(try log(dir, "log\(n).txt") == "job \(n)\n")
        }
    }

    @Test(.timeLimit(.minutes(10))) func aJobCancelledBeforeItStartsIsStoppedAtOnce() async throws {
        let dir = try TemporaryDirectory()
        let cancel = CancelToken()
        cancel.cancel()
        // An hour's sleep: were it not stopped, the test would hang (caught by its time limit).
        let end = await LocalRunner().run(LocalJob(argv: ["sleep", "3600"], workingDirectory: dir.path, logPath: dir.path + "/log.txt"),
                                          cancel: cancel)
        #expect(end == .signaled(SIGTERM))
    }

    @Test func whatCannotStartSaysWhy() async throws {
        let dir = try TemporaryDirectory()
        let missingFolder = await LocalRunner().run(LocalJob(argv: ["true"], workingDirectory: dir.path + "/nowhere",
                                                             logPath: dir.path + "/a.txt"), cancel: CancelToken())
        #expect(missingFolder == .spawnFailed("No such file or directory"))
        try Files.writeAtomically(dir.path + "/tool", "#!/bin/sh\n")  // not executable
        let notExecutable = await LocalRunner().run(LocalJob(argv: [dir.path + "/tool"], workingDirectory: dir.path,
                                                             logPath: dir.path + "/b.txt"), cancel: CancelToken())
        #expect(notExecutable == .spawnFailed("Permission denied"))
        #expect(try log(dir, "b.txt") == "flowdir: could not run \(dir.path)/tool: Permission denied\n")
        #expect(await LocalRunner().run(LocalJob(argv: [], workingDirectory: dir.path, logPath: dir.path + "/c.txt"),
                                        cancel: CancelToken()) == .spawnFailed("the command is empty"))
    }

    /// The two threads are named, for `top -H`, `perf` and /proc.
    @Test func theWatchThreadsAreNamed() async throws {
        let dir = try TemporaryDirectory()
        let job = LocalJob(argv: ["true"], workingDirectory: dir.path, logPath: dir.path + "/log.txt")
        #expect(await LocalRunner().run(job, cancel: CancelToken()) == .exited(0))
        let names = try FileManager.default.contentsOfDirectory(atPath: "/proc/self/task").compactMap {
            (try? String(contentsOfFile: "/proc/self/task/\($0)/comm", encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        #expect(Set(ChildWatch.threadNames).isSubset(of: Set(names)), "threads: \(names)")
    }
}
