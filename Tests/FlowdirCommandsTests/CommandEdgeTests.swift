#if canImport(Glibc)
import Glibc
#endif
import FlowdirCore
import FlowdirIO
import FlowdirTestSupport
import Foundation
import Testing

/// Issue 31, item 12: commands at the edges of the file system (links, `/`, a
/// `new` that was killed, `delete` of a link written with a slash).
@Suite(.tags(.large), Tier.notQuick) struct CommandEdgeTests {
    func setUp() throws -> (TemporaryDirectory, [String: String]) { try CommandFixture.onePicker() }

    @Test func lsListsAnInstanceOnceByItsRealPath() throws {
        let (dir, env) = try setUp()
        #expect(try CommandRunner.flowdir(["new", "wf/t.yaml", "root/z-real"], in: dir.path, environment: env).status == 0)
        #expect(try CommandRunner.flowdir(["new", "wf/t.yaml", "elsewhere/other"], in: dir.path, environment: env).status == 0)
        let fm = FileManager.default
        // Named to come first, however the folder is read.
        try fm.createSymbolicLink(atPath: dir.path + "/root/a-link", withDestinationPath: dir.path + "/root/z-real")
        try fm.createSymbolicLink(atPath: dir.path + "/root/b-link", withDestinationPath: dir.path + "/elsewhere/other")
        for args in [["ls", "root", "--json"], ["status", "--json", "--root", "root"]] {
            let r = try CommandRunner.flowdir(args, in: dir.path, environment: env)
            #expect(r.status == 0, "\(r.stderr)")
            #expect(r.stdout.contains("\"root/z-real\""), "\(args): \(r.stdout)")
            #expect(r.stdout.contains("\"\(dir.path)/elsewhere/other\""), "\(args): the real path of a link: \(r.stdout)")
            #expect(!r.stdout.contains("-link"), "\(args): \(r.stdout)")
        }
    }

    @Test func lsOfSlashesIsLsOfRoot() throws {
        let (dir, env) = try setUp()
        #expect(try CommandRunner.flowdir(["new", "wf/t.yaml", "inst"], in: dir.path, environment: env).status == 0)
        // A process at work in the instance: /proc/<pid>/cwd links to it.
        let sleeper = Process()
        sleeper.executableURL = URL(fileURLWithPath: "/bin/sleep")
        sleeper.arguments = ["30"]
        sleeper.currentDirectoryURL = URL(fileURLWithPath: dir.path + "/inst")
        try sleeper.run()
        defer { kill(sleeper.processIdentifier, SIGKILL); sleeper.waitUntilExit() }
        for root in ["/", "//", "/./"] {
            let r = try CommandRunner.flowdir(["ls", root, "--json", "--search", Path.basename(dir.path)], in: dir.path, environment: env)
            #expect(r.status == 0, "\(r.stderr)")
            #expect(!r.stdout.contains("proc"), "\(root): \(r.stdout)")
            #expect(r.stdout.components(separatedBy: "\"path\"").count == 2, "\(root): once: \(r.stdout)")
        }
    }

    @Test func lsSaysItsExitCodes() throws {
        let r = try CommandRunner.flowdir(["ls", "--help"])
        #expect(r.stdout.contains("Exit codes: 0"), "\(r.stdout)")
        #expect(r.stdout.contains("2 a root is not a folder"), "\(r.stdout)")
    }

    @Test func newRemovesWhatEveryDeadNewLeftBesideIt() throws {
        let (dir, env) = try setUp()
        let fm = FileManager.default
        let root = dir.path + "/root/"
        let dead = root + ".other.creating-999999-abcd1234"        // another name; its creator is gone
        let reused = root + ".third.creating-\(getpid())-abcd1234"  // its pid now names a process started after it
        let alive = root + ".fourth.creating-\(getpid())-abcd1234"  // its creator may be at work
        let notOurs = root + ".creating-notes"                      // not a folder `new` makes
        for d in [dead, reused, alive, notOurs] { try fm.createDirectory(atPath: d + "/nodes", withIntermediateDirectories: true) }
        var times = [timespec(tv_sec: time(nil) - 86_400, tv_nsec: 0), timespec(tv_sec: time(nil) - 86_400, tv_nsec: 0)]
        #expect(utimensat(AT_FDCWD, reused, &times, 0) == 0)
        #expect(try CommandRunner.flowdir(["new", "wf/t.yaml", "root/inst"], in: dir.path, environment: env).status == 0)
        #expect(!fm.fileExists(atPath: dead), "its creator is gone")
        #expect(!fm.fileExists(atPath: reused), "its pid was reused")
        #expect(fm.fileExists(atPath: alive), "its creator may still be at work")
        #expect(fm.fileExists(atPath: notOurs))
    }

    @Test(arguments: ["link/", "link//", "link/.", "./link/"])
    func deleteOfALinkWrittenWithASlashDeletesNothing(_ name: String) throws {
        let (dir, env) = try setUp()
        #expect(try CommandRunner.flowdir(["new", "wf/t.yaml", "real"], in: dir.path, environment: env).status == 0)
        try FileManager.default.createSymbolicLink(atPath: dir.path + "/link", withDestinationPath: dir.path + "/real")
        let r = try CommandRunner.flowdir(["delete", name, "--yes"], in: dir.path, environment: env)
        #expect(r.status == 1)
        #expect(r.stderr.contains("a symbolic link to the instance at \(dir.path)/real; nothing was deleted"), "\(name): \(r.stderr)")
        #expect(FileManager.default.fileExists(atPath: dir.path + "/real/instance.yaml"), "\(name)")
        #expect(FileManager.default.fileExists(atPath: dir.path + "/real/.git/HEAD"), "\(name)")
    }

    @Test func deleteOfTheCurrentFolderDeletesItAll() throws {
        let (dir, env) = try setUp()
        #expect(try CommandRunner.flowdir(["new", "wf/t.yaml", "real"], in: dir.path, environment: env).status == 0)
        let r = try CommandRunner.flowdir(["delete", ".", "--yes"], in: dir.path + "/real", environment: env)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(!FileManager.default.fileExists(atPath: dir.path + "/real"))
    }
}
