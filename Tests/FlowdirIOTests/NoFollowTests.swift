#if canImport(Glibc)
import Glibc
#endif
import FlowdirCore
@testable import FlowdirIO
import FlowdirTestSupport
import Foundation
import Testing

/// Files of an instance are read without following a symbolic link, in
/// the file itself or any folder on the way (issue #41: a collaborator's
/// `params.yaml` linked to `~/.config/flowdir/secrets.yaml`).
@Suite(.tags(.medium)) struct NoFollowTests {
    final class Folder {
        let dir: TemporaryDirectory
        let secret: String
        var root: String { dir.path + "/inst" }

        init() throws {
            dir = try TemporaryDirectory()
            secret = dir.path + "/secrets.yaml"
            try dir.write("secrets.yaml", "token: SECRET\n")
            try dir.write("inst/nodes/a/params.yaml", "text: hi\n")
            try dir.write("elsewhere/params.yaml", "token: SECRET\n")
        }

        func link(_ rel: String, to target: String) throws {
            try? FileManager.default.removeItem(atPath: root + "/" + rel)
            try FileManager.default.createSymbolicLink(atPath: root + "/" + rel, withDestinationPath: target)
        }
    }

    @Test func aLinkedFileOrFolderIsRefusedByName() throws {
        let f = try Folder()
        let fs = LocalFileSystem()
        #expect(try fs.readFile(inside: f.root, "nodes/a/params.yaml", limit: 1 << 20) == Array("text: hi\n".utf8))
        #expect(try fs.readFile(inside: f.root, "nodes/a/state.yaml", limit: 1 << 20) == nil)
        try f.link("nodes/a/params.yaml", to: f.secret)
        #expect(throws: FileSystemError.symbolicLink(f.root + "/nodes/a/params.yaml")) {
            try fs.readFile(inside: f.root, "nodes/a/params.yaml", limit: 1 << 20)
        }
        // A relative link inside the folder is a link all the same.
        try f.dir.write("inst/nodes/a/real.yaml", "x: 1\n")
        try f.link("nodes/a/params.yaml", to: "real.yaml")
        #expect(throws: FileSystemError.symbolicLink(f.root + "/nodes/a/params.yaml")) {
            try fs.readFile(inside: f.root, "nodes/a/params.yaml", limit: 1 << 20)
        }
        // A folder on the way: named, whether or not the file is there.
        try f.link("nodes/b", to: f.dir.path + "/elsewhere")
        #expect(throws: FileSystemError.symbolicLink(f.root + "/nodes/b")) {
            try fs.readFile(inside: f.root, "nodes/b/params.yaml", limit: 1 << 20)
        }
        #expect(throws: FileSystemError.symbolicLink(f.root + "/nodes/b")) {
            try fs.readFile(inside: f.root, "nodes/b/state.yaml", limit: 1 << 20)
        }
        #expect(fs.firstLink(inside: f.root, among: ["nodes/a/out", "nodes/b/runs"]) == f.root + "/nodes/b")
        #expect(throws: FileSystemError.outside(f.root + "/../secrets.yaml")) {
            try fs.readFile(inside: f.root, "../secrets.yaml", limit: 1 << 20)
        }
        // The instance's own folder may be reached through a link: the person named it so.
        try FileManager.default.createSymbolicLink(atPath: f.dir.path + "/via", withDestinationPath: f.root)
        #expect(try fs.readFile(inside: f.dir.path + "/via", "nodes/a/real.yaml", limit: 1 << 20) == Array("x: 1\n".utf8))
    }

    /// What a kernel without openat2 does: each folder opened with O_NOFOLLOW.
    @Test func walkingRefusesLinksToo() throws {
        let f = try Folder()
        let dir = open(f.root, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        defer { close(dir) }
        let flags = O_RDONLY | O_NOFOLLOW | O_CLOEXEC
        guard case .success(let fd) = LocalFileSystem.openWalking(dir, "nodes/a/params.yaml", flags) else {
            Issue.record("a plain file was not opened")
            return
        }
        close(fd)
        try f.link("nodes/b", to: f.dir.path + "/elsewhere")
        #expect(LocalFileSystem.openWalking(dir, "nodes/b/params.yaml", flags).failure?.code == ELOOP)
        try f.link("nodes/a/params.yaml", to: f.secret)
        #expect(LocalFileSystem.openWalking(dir, "nodes/a/params.yaml", flags).failure?.code == ELOOP)
    }

    @Test func theConfinedFileSystemReadsTheInstancesFilesSo() throws {
        let f = try Folder()
        let fs = ConfinedFileSystem(LocalFileSystem(), root: f.root)
        #expect(try fs.readFile(f.root + "/nodes/a/params.yaml", limit: 1 << 20) == Array("text: hi\n".utf8))
        try f.link("nodes/a/params.yaml", to: f.secret)
        #expect(throws: FileSystemError.symbolicLink(f.root + "/nodes/a/params.yaml")) {
            try fs.readFile(f.root + "/nodes/a/params.yaml", limit: 1 << 20)
        }
        #expect(!fs.isRegularFile(f.root + "/nodes/a/params.yaml"))
        // Outside its root, as the base reads: a template's folder may hold links.
        #expect(try fs.readFile(f.secret, limit: 1 << 20) == Array("token: SECRET\n".utf8))
        try FileManager.default.createSymbolicLink(atPath: f.root + "/tools", withDestinationPath: f.dir.path + "/elsewhere")
        #expect(throws: FileSystemError.symbolicLink(f.root + "/tools")) { try fs.listDirectory(f.root + "/tools") }
    }

    /// The store commits a file as it is in the folder, never what a link points to.
    @Test func theStoreNeverCommitsALinksTarget() throws {
        let dir = try TemporaryDirectory()
        try dir.write("secret.txt", "SECRET\n")
        let store = try InstanceStore.create(at: dir.path + "/inst")
        defer { try? store.close() }
        try FileManager.default.createDirectory(atPath: dir.path + "/inst/nodes/a/runs/1", withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: dir.path + "/inst/nodes/a/runs/1/log.txt", withDestinationPath: dir.path + "/secret.txt")
        #expect(store.read("nodes/a/runs/1/log.txt") == nil)
        #expect(throws: (any Error).self) {
            try store.commit([.existing("nodes/a/runs/1/log.txt")], message: CommitMessage(summary: "log", event: "test"))
        }
        let blobs = try CommandRunner.run("/usr/bin/git", ["-C", dir.path + "/inst", "cat-file", "--batch-all-objects", "--batch"]).stdout
        #expect(!blobs.contains("SECRET"))
    }
}

extension Result {
    var failure: Failure? { if case .failure(let f) = self { f } else { nil } }
}
