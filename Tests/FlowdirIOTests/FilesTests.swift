import Foundation
import FlowdirCore
@testable import FlowdirIO
import FlowdirTestSupport
import Testing

@Suite(.tags(.medium)) struct FilesTests {
    @Test func anAtomicWriteMakesItsFolderAndLeavesNoTempFile() throws {
        let dir = try TemporaryDirectory()
        let file = dir.path + "/a/b/state.yaml"
        try Files.writeAtomically(file, "one\n")
        try Files.writeAtomically(file, "two\n")
        #expect(try String(contentsOfFile: file, encoding: .utf8) == "two\n")
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path + "/a/b") == ["state.yaml"])
    }

    /// Nothing to write is truncation in place (no temp file, no rename),
    /// with the same outcome: folders made, old bytes gone, and a symlink
    /// replaced, its target left alone.
    @Test func anEmptyWriteTruncatesInPlaceAndNeverThroughASymlink() throws {
        let dir = try TemporaryDirectory()
        let file = dir.path + "/runs/1/log.txt"
        try Files.writeAtomically(file, [])
        #expect(try Data(contentsOf: URL(fileURLWithPath: file)).isEmpty)
        try Files.writeAtomically(file, "some output\n")
        try Files.writeAtomically(file, [])
        #expect(try Data(contentsOf: URL(fileURLWithPath: file)).isEmpty)
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path + "/runs/1") == ["log.txt"])
        try Files.writeAtomically(dir.path + "/target", "keep\n")
        try FileManager.default.createSymbolicLink(atPath: dir.path + "/link", withDestinationPath: dir.path + "/target")
        try Files.writeAtomically(dir.path + "/link", [])
        #expect(try String(contentsOfFile: dir.path + "/target", encoding: .utf8) == "keep\n")
        #expect(try FileManager.default.attributesOfItem(atPath: dir.path + "/link")[.type] as? FileAttributeType == .typeRegular)
        #expect(try Data(contentsOf: URL(fileURLWithPath: dir.path + "/link")).isEmpty)
        withExtendedLifetime(dir) {}
    }

    @Test func aTempFileLeftByAKilledProcessWithThisPidIsSteppedOver() throws {
        let dir = try TemporaryDirectory()
        let file = dir.path + "/state.yaml"
        // The names the next two writes would try first.
        let next = Files.temporaryCounter.locked { $0 } + 1
        for n in [next, next + 1] {
            let stale = dir.path + "/" + Files.temporaryPrefix(file) + "\(Files.processID)-\(n)"
            try Data("stale".utf8).write(to: URL(fileURLWithPath: stale))
        }
        try Files.writeAtomically(file, "fresh\n")
        #expect(try String(contentsOfFile: file, encoding: .utf8) == "fresh\n")
        // Recovery's sweep takes the stale ones away.
        Files.removeTemporarySiblings(of: file)
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path) == ["state.yaml"])
    }

    /// How an instance's state and params files are read: what is not a
    /// regular file is absent, and a FIFO in its place does not hang.
    @Test func readingOnlyRegularFiles() throws {
        let dir = try TemporaryDirectory()
        let fs = LocalFileSystem()
        try dir.write("a.yaml", "state: ready\n")
        try FileManager.default.createDirectory(atPath: dir.path + "/folder", withIntermediateDirectories: true)
        #expect(mkfifo(dir.path + "/fifo", 0o644) == 0)
        #expect(try fs.readFileIfRegular(dir.path + "/a.yaml", limit: 100) == Array("state: ready\n".utf8))
        #expect(try fs.readFileIfRegular(dir.path + "/missing", limit: 100) == nil)
        #expect(try fs.readFileIfRegular(dir.path + "/a.yaml/below", limit: 100) == nil)
        #expect(try fs.readFileIfRegular(dir.path + "/folder", limit: 100) == nil)
        #expect(try fs.readFileIfRegular(dir.path + "/fifo", limit: 100) == nil)
        #expect(throws: FileSystemError.tooLarge(dir.path + "/a.yaml", size: 13, limit: 5)) {
            try fs.readFileIfRegular(dir.path + "/a.yaml", limit: 5)
        }
    }
}
