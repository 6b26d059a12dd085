import AsyncHTTPClient
import FlowdirCore
import FlowdirIO
@testable import FlowdirPages
import FlowdirTestSupport
import Foundation
import NIOCore
import NIOHTTP1
import Testing

/// Files of instances as `flowdir serve` sends them (docs/serve.md): read
/// from disk a chunk at a time, the part a `Range` asks for (so a video
/// seeks), with every header of docs/security.md kept; a file whose content
/// is not on this machine said so, never sent as its pointer; thumbnails
/// kept within their bound, least recently used dropped first.
@Suite(.tags(.medium)) struct UIServerFilesTests {
    typealias Running = UIServerTests.Running

    /// An MP4 as its first bytes say (`ftyp`), then a pattern long enough to
    /// take several of the server's chunks.
    static let video: [UInt8] = Array("\0\0\0\u{18}ftypisom".utf8) + (0..<(2 * ServedFile.chunk + 1234)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 9) }

    func get(_ s: Running, _ path: String, range: String?, _ extra: [(String, String)] = []) async throws -> Running.Answer {
        try await s.request(.GET, path, headers: (range.map { [("Range", $0)] } ?? []) + extra)
    }

    @Test func aRangeGetsThoseBytesWith206AndEveryHeaderOfAFile() async throws {
        let s = try await Running()
        FileManager.default.createFile(atPath: s.backend.folder + "/nodes/a/out/clip.mp4", contents: Data(Self.video))
        let path = "/api/instances/i1/files/nodes/a/out/clip.mp4"
        let n = Self.video.count

        let whole = try await get(s, path, range: nil)
        #expect(whole.status == 200 && whole.bytes == Self.video)
        #expect(whole.headers.first(name: "Accept-Ranges") == "bytes" && whole.headers.first(name: "Content-Length") == "\(n)")

        // first-last, first-, -suffix; one within a chunk, one across three.
        let cases: [(String, Int, Int)] = [("bytes=0-99", 0, 99), ("bytes=1000-", 1000, n - 1), ("bytes=-500", n - 500, n - 1),
                                           ("bytes=100-\(2 * ServedFile.chunk + 7)", 100, 2 * ServedFile.chunk + 7),
                                           ("bytes=\(n - 10)-\(n + 5000)", n - 10, n - 1), ("bytes=-\(n + 1)", 0, n - 1)]
        for (range, first, last) in cases {
            let r = try await get(s, path, range: range)
            #expect(r.status == 206, "\(range): \(r.status)")
            #expect(r.bytes == Array(Self.video[first...last]), "\(range): \(r.bytes.count) bytes")
            #expect(r.headers.first(name: "Content-Range") == "bytes \(first)-\(last)/\(n)", "\(range): \(r.headers)")
            #expect(r.headers.first(name: "Content-Length") == "\(last - first + 1)")
            // As the whole file is sent: typed by its bytes, shown inline, never sniffed, sandboxed.
            #expect(r.headers.first(name: "Content-Type") == "video/mp4")
            #expect(r.headers.first(name: "Content-Disposition")?.hasPrefix("inline") == true)
            #expect(r.headers.first(name: "X-Content-Type-Options") == "nosniff")
            #expect(r.headers.first(name: "Content-Security-Policy") == SecurityHeaders.filePolicy)
            #expect(r.headers.first(name: "Accept-Ranges") == "bytes")
        }

        for range in ["bytes=\(n)-", "bytes=\(n + 10)-\(n + 20)", "bytes=-0"] {
            let r = try await get(s, path, range: range)
            #expect(r.status == 416, "\(range): \(r.status)")
            #expect(r.headers.first(name: "Content-Range") == "bytes */\(n)")
            #expect(r.text.contains("is not within clip.mp4"), "\(r.text)")
            #expect(r.headers.first(name: "X-Content-Type-Options") == "nosniff")
        }
        // Not a range the server serves, or conditional on a validator it never sent: the whole file.
        for (range, extra) in [("bytes=5-2", []), ("bytes=0-1,5-6", []), ("items=0-5", []), ("bytes=0-9", [("If-Range", "\"x\"")])] {
            let r = try await get(s, path, range: range, extra)
            #expect(r.status == 200 && r.bytes == Self.video, "\(range) \(extra): \(r.status)")
        }
        // HEAD: the length and the headers, no bytes.
        let head = try await s.request(.HEAD, path, headers: [("Range", "bytes=10-19")])
        #expect(head.status == 206 && head.bytes.isEmpty && head.headers.first(name: "Content-Length") == "10", "\(head.status) \(head.headers) \(head.bytes.count)")
        await s.stop()
    }

    @Test func aRangeOfAScriptableFileIsStillAnAttachment() async throws {
        let s = try await Running()
        try s.dir.write("inst/nodes/a/out/evil.svg", #"<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>"#)
        let r = try await get(s, "/api/instances/i1/files/nodes/a/out/evil.svg", range: "bytes=0-3")
        #expect(r.status == 206 && r.text == "<svg")
        #expect(r.headers.first(name: "Content-Type") == "application/octet-stream")
        #expect(r.headers.first(name: "Content-Disposition")?.hasPrefix("attachment") == true)
        #expect(r.headers.first(name: "Content-Security-Policy")?.hasPrefix("sandbox;") == true)
        await s.stop()
    }

    /// A pointer in the working tree (a clone, or content freed): the file
    /// and its thumbnail say it is not here and how to get it; no
    /// thumbnail is attempted.
    @Test func aFileWhoseContentIsNotHereIsSaidSoNeverServedAsItsPointer() async throws {
        let maker = UIServerSecurityTests.RecordingThumbnailer()
        let s = try await Running(thumbnailer: maker)
        let pointer = try #require(LFSPointer(oid: String(repeating: "ab", count: 32), size: 12_897_485))
        try s.dir.write("inst/nodes/a/out/big.png", pointer.text)
        for kind in ["files", "thumbs"] {
            let r = try await get(s, "/api/instances/i1/\(kind)/nodes/a/out/big.png", range: nil)
            #expect(r.status == 404, "\(kind): \(r.status)")
            #expect(r.text.contains("nodes/a/out/big.png is not on this machine (12.3 MB)"), "\(kind): \(r.text)")
            #expect(r.text.contains("flowdir storage get ") && r.text.contains("inst/a"), "\(kind): \(r.text)")
            #expect(!r.text.contains(pointer.oid) && !r.text.contains("git-lfs.github.com"))
        }
        #expect(maker.asked.locked { $0 }.isEmpty)
        // A text file that merely mentions a pointer's first line is a file.
        try s.dir.write("inst/nodes/a/out/notes.txt", "version https://git-lfs.github.com/spec/v1\nnot a pointer\n")
        #expect(try await get(s, "/api/instances/i1/files/nodes/a/out/notes.txt", range: nil).status == 200)
        await s.stop()
    }

    /// Thumbnails take at most `limit` bytes: once over it, the least
    /// recently used are dropped, in memory and across a restart (by mtime).
    @Test func thumbnailsStayWithinTheirBoundLeastRecentlyUsedFirst() async throws {
        let dir = try TemporaryDirectory()
        let instance = dir.path + "/inst"
        let images = (1...5).map { SampleFiles.png(width: 40 + $0, height: 40) }
        for (i, png) in images.enumerated() {
            try dir.write("inst/nodes/a/out/\(i).png", "")
            FileManager.default.createFile(atPath: instance + "/nodes/a/out/\(i).png", contents: Data(png))
        }
        let sizes = images.map(\.count)
        let thumbs = instance + "/.flowdir/thumbs"
        func kept() throws -> Set<String> { Set(try FileManager.default.contentsOfDirectory(atPath: thumbs)) }
        func name(_ i: Int) -> String { GitRepository.blobID(of: images[i]).hex + ".png" }
        // Room for any three, never four (the copy thumbnailer keeps each image as it is).
        let limit = 3 * sizes.max()! + 10
        #expect(4 * sizes.min()! > limit)
        let cache = ThumbnailCache(maker: UIServerTests.CopyThumbnailer(), limit: limit)
        func thumb(_ i: Int, _ c: ThumbnailCache) async throws -> String {
            try await c.thumbnail(instance: instance, path: instance + "/nodes/a/out/\(i).png")
        }
        for i in 0..<3 { _ = try await thumb(i, cache) }
        #expect(try kept() == [name(0), name(1), name(2)])
        _ = try await thumb(0, cache)  // used again: 1 is now the least recently used
        _ = try await thumb(3, cache)
        #expect(try kept() == [name(0), name(2), name(3)])
        _ = try await thumb(4, cache)
        #expect(try kept() == [name(0), name(3), name(4)])

        // A server started later knows the recency from the files' mtimes.
        let old = instance + "/.flowdir/thumbs/" + name(3)
        var times = [timespec(tv_sec: 1_000_000, tv_nsec: 0), timespec(tv_sec: 1_000_000, tv_nsec: 0)]
        #expect(utimensat(AT_FDCWD, old, &times, 0) == 0)
        let later = ThumbnailCache(maker: UIServerTests.CopyThumbnailer(), limit: limit)
        _ = try await thumb(1, later)
        #expect(try kept() == [name(0), name(4), name(1)])
    }
}
