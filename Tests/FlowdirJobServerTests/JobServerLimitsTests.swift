#if canImport(Glibc)
import Glibc
#endif
import AsyncHTTPClient
import FlowdirCore
import FlowdirIO
import FlowdirJobServer
import FlowdirTestSupport
import Foundation
import NIOCore
import Testing

/// What a client can make the job server hold (docs/security.md): bodies
/// bounded per route, uploads streamed to disk, nothing kept past a
/// stated time and count, a bounded access log, connections that go
/// quiet closed.
@Suite(.tags(.large), Tier.notQuick) struct JobServerLimitsTests {
    /// The files a store holds (uploads and outputs), and what it is receiving now.
    static func stored(_ h: Harness) -> (files: [String], incoming: [String]) {
        let all = (try? FileManager.default.contentsOfDirectory(atPath: h.data + "/files")) ?? []
        return (all.filter { $0 != ".incoming" }, (try? FileManager.default.contentsOfDirectory(atPath: h.data + "/files/.incoming")) ?? [])
    }

    static func predictionFiles(_ h: Harness) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: h.data + "/predictions")) ?? []).filter { $0.hasSuffix(".json") }
    }

    static func waitFor(_ what: String, timeout: Double = 30, _ condition: () async throws -> Bool) async throws {
        if try await !Eventually.until(timeout: .seconds(timeout), every: .milliseconds(50), condition) {
            Issue.record("timed out waiting for \(what)")
        }
    }

    /// 16 MB by default: a prediction with its files inline as data: URIs.
    @Test func aJSONBodyPastItsLimitIsRefused() async throws {
        let h = try await Harness()
        let text = String(repeating: "a", count: 17 << 20)
        let a = try? await h.request(.POST, "/v1/models/tools/Work/predictions", body: Array(#"{"input": {"text": ""#.utf8) + Array(text.utf8) + Array(#""}}"#.utf8),
                                     contentType: "application/json")
        // The answer, or the connection closed under a client still sending what will not be read.
        #expect(a == nil || a?.status == 413, "\(a?.status ?? 0) \(a?.text.prefix(300) ?? "")")
        #expect(try await h.request(.GET, "/v1/_stats").json["created"]?.number == 0)
    }

    @Test func anUploadPastMaxUploadIsRefusedAndLeavesNothing() async throws {
        let h = try await Harness { $0.maxUpload = 1 << 20 }
        let big = [UInt8](repeating: 7, count: 3 << 20)
        // Said by its Content-Length: refused before a byte is read.
        let said = try await h.request(.POST, "/v1/files", body: big, contentType: "application/octet-stream")
        #expect(said.status == 413 && said.json["detail"]?.stringValue?.contains("--max-upload") == true, "\(said.text)")
        // Sent in chunks with no length: refused once past the limit, and what was written removed.
        for type in ["application/octet-stream", "multipart/form-data; boundary=bnd"] {
            var r = HTTPClientRequest(url: h.base + "/v1/files")
            r.method = .POST
            r.headers.add(name: "Authorization", value: "Bearer \(Harness.token)")
            r.headers.add(name: "Content-Type", value: type)
            let head = type.hasPrefix("multipart") ? Array("--bnd\r\nContent-Disposition: form-data; name=\"content\"; filename=\"x\"\r\n\r\n".utf8) : []
            let chunks = [ByteBuffer(bytes: head)] + (0..<12).map { _ in ByteBuffer(bytes: [UInt8](repeating: 1, count: 256 << 10)) }
            let (stream, feed) = AsyncStream<ByteBuffer>.makeStream()
            for c in chunks { feed.yield(c) }
            feed.finish()
            r.body = .stream(stream, length: .unknown)
            let response = try? await HTTPClient.shared.execute(r, timeout: .seconds(60))
            // The answer, or the connection closed as the server stops reading.
            #expect(response == nil || response?.status.code == 413, "\(type): \(response?.status.code ?? 0)")
        }
        try await Self.waitFor("the refused uploads to be removed") { Self.stored(h).incoming.isEmpty }
        #expect(Self.stored(h).files.isEmpty, "\(Self.stored(h))")
        // Within the limit: taken.
        #expect(try await h.request(.POST, "/v1/files", body: [UInt8](repeating: 1, count: 1 << 20), contentType: "application/octet-stream").status == 201)
    }

    @Test func aMultipartUploadCutShortLeavesNothing() async throws {
        let h = try await Harness()
        let body = Array("--bnd\r\nContent-Disposition: form-data; name=\"content\"; filename=\"x.txt\"\r\n\r\nhalf of it".utf8)
        let a = try await h.request(.POST, "/v1/files", body: body, contentType: "multipart/form-data; boundary=bnd")
        #expect(a.status == 422 && a.json["detail"]?.stringValue?.contains("ended before") == true, "\(a.text)")
        let none = try await h.request(.POST, "/v1/files", body: Array("--bnd\r\nContent-Disposition: form-data; name=\"metadata\"\r\n\r\n{}\r\n--bnd--\r\n".utf8),
                                       contentType: "multipart/form-data; boundary=bnd")
        #expect(none.status == 422 && none.json["detail"]?.stringValue?.contains("content") == true, "\(none.text)")
        #expect(Self.stored(h).files.isEmpty && Self.stored(h).incoming.isEmpty, "\(Self.stored(h))")
    }

    /// The built `flowdir jobserver`, its memory read from /proc: a 100 MB
    /// upload once cost it ~250 MB (raw) to ~350 MB (multipart) of memory.
    @Test func aLargeUploadGoesToDiskNotIntoMemory() async throws {
        try await offPool {
            let dir = try TemporaryDirectory()
            let server = try JobServerProcess(dir: dir.path + "/data")
            let file = dir.path + "/big.bin"
            _ = FileManager.default.createFile(atPath: file, contents: Data(repeating: 0x5A, count: 100 << 20))
            let pid = try #require(Self.serverPid(server))
            let before = try #require(Self.peakMemory(pid))
            for form in [["--data-binary", "@" + file, "-H", "Content-Type: application/octet-stream"], ["-F", "content=@" + file + ";type=application/octet-stream"]] {
                let r = try CommandRunner.run("/usr/bin/curl", ["-sS", "-o", "/dev/null", "-w", "%{http_code}", "-H", "Authorization: Bearer \(server.token)"]
                                                + form + [server.url + "/files"])
                #expect(r.stdout == "201", "\(r.stdout) \(r.stderr)")
            }
            let after = try #require(Self.peakMemory(pid))
            // Generous: chunks in flight, allocator slack; far below the file's size.
            #expect(after - before < 48 << 20, "peak memory grew by \((after - before) >> 20) MB for two 100 MB uploads")
            server.stop()
        }
    }

    /// The job server's pid: the `flowdir jobserver` with its --dir.
    static func serverPid(_ server: JobServerProcess) -> pid_t? {
        for name in (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? [] {
            guard let pid = pid_t(name), let cmd = try? Data(contentsOf: URL(fileURLWithPath: "/proc/\(name)/cmdline")) else { continue }
            let args = cmd.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
            if args.count > 3, args[1] == "jobserver", args.contains(server.dir) { return pid }
        }
        return nil
    }

    /// VmHWM: the most memory the process has held, in bytes.
    static func peakMemory(_ pid: pid_t) -> Int? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
              let line = text.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
              let kb = Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "") else { return nil }
        return kb << 10
    }

    @Test func filesAndEndedPredictionsAreRemovedOnATimer() async throws {
        // Lifetimes and the sweep's timer pass when the test moves the clock, not
        // when a loaded machine happens to be slow.
        let clock = ManualClock()
        let h = try await Harness {
            $0.fileLifetime = 60
            $0.keepPredictions = 60
            $0.clock = clock.flowdirClock
        }
        let up = try await h.request(.POST, "/v1/files", body: Array("upload".utf8), contentType: "text/plain")
        #expect(up.status == 201)
        let done = try await h.wait(try #require(try await h.create("tools/Work", ["text": "out"])["id"]?.stringValue))
        #expect(done["status"] == "succeeded")
        #expect(done["output"]?.stringValue != nil)
        // Within their time, sweeps keep them.
        #expect(!Self.stored(h).files.isEmpty && !Self.predictionFiles(h).isEmpty)
        // No request needed once their time has passed: a timer removes them.
        let long = try #require(try await h.create("tools/Work", ["text": "long", "sleep": 30])["id"]?.stringValue)
        try await h.wait(long, for: ["processing"])
        clock.advance(by: .seconds(120))
        try await Self.waitFor("files and predictions past their time to be removed") {
            Self.stored(h).files.isEmpty && Self.predictionFiles(h).filter { !$0.contains(long) }.isEmpty
        }
        #expect(try await h.request(.GET, "/v1/predictions/\(try #require(done["id"]?.stringValue))").status == 404)
        // What runs is never removed, however old: the sweep that removed the others passed it by.
        #expect(try await h.get(long)["status"] == "processing")
        _ = try await h.request(.POST, "/v1/predictions/\(long)/cancel")
    }

    @Test func atMostMaxPredictionsAreKeptWithTheirFiles() async throws {
        let h = try await Harness {
            $0.maxPredictions = 3
            $0.sweepInterval = .milliseconds(100)
        }
        var ids: [String] = []
        var outputs: [String] = []
        for i in 0..<5 {
            let p = try await h.wait(try #require(try await h.create("tools/Work", ["text": .string("p\(i)")])["id"]?.stringValue))
            ids.append(try #require(p["id"]?.stringValue))
            outputs.append(try #require(p["output"]?.stringValue))
        }
        try await Self.waitFor("the oldest predictions to be removed") { Self.predictionFiles(h).count == 3 }
        for i in 0..<2 {
            #expect(try await h.request(.GET, "/v1/predictions/\(ids[i])").status == 404)
            #expect(try await h.request(.GET, outputs[i]).status == 404)
        }
        for i in 2..<5 { #expect(try await h.request(.GET, outputs[i]).text == "p\(i)") }
        #expect(try await h.request(.GET, "/v1/_stats").json["created"]?.number == 5)
    }

    @Test func theAccessLogIsRotatedAtItsLimit() async throws {
        let h = try await Harness { $0.accessLogLimit = 4096 }
        for _ in 0..<150 { _ = try await h.request(.GET, "/v1/predictions?cursor=b99999") }
        let size = { (path: String) in ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? Int) ?? -1 }
        #expect(size(h.data + "/access.log") <= 4096 && size(h.data + "/access.log.1") <= 4096 && size(h.data + "/access.log.1") > 3000)
        #expect(!FileManager.default.fileExists(atPath: h.data + "/access.log.2"))
    }

    @Test func aRefusedRequestIsOneShortLineInTheLog() async throws {
        let h = try await Harness()
        let junk = String(repeating: "x", count: 4000)
        #expect(try await h.request(.GET, "/v1/predictions/\(junk)?q=\(junk)", token: nil).status == 401)
        let line = try #require(h.accessLog.last)
        #expect(line.hasSuffix(" 401") && line.count < 200 && !line.contains("?q="), "\(line.count): \(line.prefix(300))")
    }

    @Test func urlsAreMadeWithThePublicURLWhenGiven() async throws {
        let h = try await Harness { $0.publicURL = "http://gpu-box.lan:8700/" }
        let q = try await h.request(.POST, "/v1/models/tools/Work/predictions", json: ["input": ["text": "y"]])
        #expect(q.json["urls"]?["get"]?.stringValue?.hasPrefix("http://gpu-box.lan:8700/v1/predictions/") == true, "\(q.text)")
        let done = try await h.wait(try #require(q.json["id"]?.stringValue))
        let output = try #require(done["output"]?.stringValue)
        #expect(output.hasPrefix("http://gpu-box.lan:8700/v1/files/"), "\(done)")
        // Given back as an input, it is known as this server's own file.
        let pair = try await h.wait(try #require(try await h.create("tools/Pair", ["src": .string(output)])["id"]?.stringValue))
        #expect(pair["status"] == "succeeded", "\(pair)")
    }

    /// A client that opens a connection and sends part of a request (or
    /// nothing) is cut off, so it cannot hold connections for good.
    @Test func aConnectionThatGoesQuietIsClosed() async throws {
        let h = try await Harness { $0.idleTimeout = .seconds(1) }
        let port = h.port
        let closed = try await offPool { () -> Bool in
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            defer { close(fd) }
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            address.sin_port = in_port_t(UInt16(port).bigEndian)
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
            }
            guard connected else { return false }
            let partial = Array("GET /v1/predictions HTTP/1.1\r\nHost: x\r\nX-Slow: ".utf8)
            _ = partial.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, 0) }
            // A guard against a hang, not a speed target: the server closes it after a second.
            var timeout = timeval(tv_sec: 60, tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            var byte: UInt8 = 0
            let n = recv(fd, &byte, 1, 0)
            return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
        }
        #expect(closed)
    }
}
