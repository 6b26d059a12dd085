import FlowdirCore
@testable import FlowdirIO
import FlowdirTestSupport
import Foundation
import Testing

@Suite(.tags(.medium)) struct LocalFileSystemTests {
    /// Files are read whole whatever their size, in one read when their size is
    /// right; files that report no size (/proc) are read to their end.
    @Test func filesAreReadWholeWhateverTheirSize() throws {
        let dir = try TemporaryDirectory()
        let fs = LocalFileSystem()
        for size in [0, 1, 4095, 4096, 4097, 300_000] {
            let bytes = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31) }
            let path = dir.path + "/f\(size)"
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            #expect(try fs.readFile(path, limit: 1 << 20) == bytes, "size \(size)")
            #expect(try fs.readFileIfRegular(path, limit: 1 << 20) == bytes, "size \(size)")
        }
        let status = try fs.readFile("/proc/self/status", limit: 1 << 20)
        #expect(String(decoding: status, as: UTF8.self).contains("\nPid:"))
        #expect(throws: FileSystemError.self) { try fs.readFile(dir.path + "/f300000", limit: 1000) }
        #expect(try fs.readFileIfRegular(dir.path + "/missing", limit: 10) == nil)
    }
}
