#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing
@testable import FlowdirIO
import FlowdirTestSupport

/// A job left by a killed flowdir is found by the work folder it was started for.
@Suite(.tags(.medium)) struct ProcessTableTests {
    @Test func aJobIsFoundByTheRunDirectoryInItsEnvironment() throws {
        let dir = try TemporaryDirectory()
        for name in ["work/a/1", "work/b/1", "work/c/1", "elsewhere"] {
            try FileManager.default.createDirectory(atPath: dir.path + "/" + name, withIntermediateDirectories: true)
        }
        // Tagged, but working elsewhere (a tool that changed folder).
        let tagged = try GroupLeader(["/bin/sleep", "30"], directory: dir.path + "/elsewhere",
                                     environment: ["FLOWDIR_RUN_DIR": dir.path + "/work/a/1"])
        // Working in a job's folder, but not started for it (a person's shell): left alone.
        let bare = try GroupLeader(["/bin/sleep", "30"], directory: dir.path + "/work/b/1")
        // Neither: not a job of these folders.
        let other = try GroupLeader(["/bin/sleep", "30"], directory: dir.path + "/elsewhere",
                                    environment: ["FLOWDIR_RUN_DIR": dir.path + "/work/c/2"])
        defer { [tagged, bare, other].forEach { $0.end() } }
        let groups = ProcessTable.jobGroups(runDirectories: ["a", "b", "c"].map { dir.path + "/work/\($0)/1" })
        #expect(groups == [dir.path + "/work/a/1": [tagged.pid]])
    }

    @Test func aJobStartedThroughAnotherSpellingOfItsFolderIsFound() throws {
        let dir = try TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: dir.path + "/work/a/1", withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: dir.path + "/link", withDestinationPath: dir.path + "/work")
        let job = try GroupLeader(["/bin/sleep", "30"], directory: dir.path,
                                  environment: ["FLOWDIR_RUN_DIR": dir.path + "/link/a/1"])
        defer { job.end() }
        #expect(ProcessTable.jobGroups(runDirectories: [dir.path + "/work/a/1"]) == [dir.path + "/work/a/1": [job.pid]])
    }

    /// Killed between its clone and its exec, a job is still a copy of the
    /// flowdir that made it: named after the `flowdir-spawn` thread, with
    /// that flowdir's environment. It is found by the folder it is in.
    @Test func aJobCaughtBeforeItsExecIsFoundByItsFolder() throws {
        let dir = try TemporaryDirectory()
        for name in ["work/a/1", "work/b/1", "bin"] {
            try FileManager.default.createDirectory(atPath: dir.path + "/" + name, withIntermediateDirectories: true)
        }
        // A program run under that name has it as its own (/proc/PID/comm).
        try FileManager.default.createSymbolicLink(atPath: dir.path + "/bin/flowdir-spawn", withDestinationPath: "/bin/sleep")
        let caught = try GroupLeader([dir.path + "/bin/flowdir-spawn", "30"], directory: dir.path + "/work/a/1")
        let elsewhere = try GroupLeader([dir.path + "/bin/flowdir-spawn", "30"], directory: dir.path + "/work/b/1")
        defer { [caught, elsewhere].forEach { $0.end() } }
        #expect(ProcessTable.jobGroups(runDirectories: [dir.path + "/work/a/1"]) == [dir.path + "/work/a/1": [caught.pid]])
    }

    /// Inside exec, a job's environment reads empty for a moment: it is
    /// looked at again, and found once its program has it.
    @Test func aJobInsideItsExecIsFoundOnALaterLook() throws {
        let dir = try TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: dir.path + "/work/a/1", withIntermediateDirectories: true)
        // Its environment reads empty for 50 ms, then names its folder.
        let job = try GroupLeader(["/bin/sh", "-c", "sleep 0.05; export FLOWDIR_RUN_DIR=\"$PWD\"; exec /bin/sleep 30"],
                                  directory: dir.path + "/work/a/1")
        defer { job.end() }
        #expect(ProcessTable.jobGroups(runDirectories: [dir.path + "/work/a/1"], patience: .seconds(10))
                == [dir.path + "/work/a/1": [job.pid]])
        // A program whose environment stays empty is not taken for a job.
        let bare = try GroupLeader(["/bin/sleep", "30"], directory: dir.path + "/work/a/1")
        defer { bare.end() }
        #expect(ProcessTable.jobGroups(runDirectories: [dir.path + "/work/a/1"]) == [dir.path + "/work/a/1": [job.pid]])
    }

    @Test func aDeadJobIsNeverNamed() throws {
        let dir = try TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: dir.path + "/work/a/1", withIntermediateDirectories: true)
        // A zombie (not reaped yet) that was started there is no longer a job to end.
        let job = try GroupLeader(["/bin/true"], directory: dir.path + "/work/a/1",
                                  environment: ["FLOWDIR_RUN_DIR": dir.path + "/work/a/1"])
        var siginfo = siginfo_t()
        #expect(waitid(P_PID, id_t(job.pid), &siginfo, WEXITED | WNOWAIT) == 0)
        #expect(ProcessTable.jobGroups(runDirectories: [dir.path + "/work/a/1"]).isEmpty)
        job.end()
        #expect(ProcessTable.jobGroups(runDirectories: [dir.path + "/work/a/1"]).isEmpty)
        #expect(ProcessTable.jobGroups(runDirectories: [dir.path + "/missing"]).isEmpty)
    }
}
