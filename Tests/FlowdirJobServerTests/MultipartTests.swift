@testable import FlowdirJobServer
import FlowdirTestSupport
import Testing

/// The files API's multipart parser: a pure function of the bytes, fed in
/// pieces of any size (as an upload arrives), giving the same part as the
/// body whole.
@Suite(.tags(.small)) struct MultipartTests {
    static let body = Array((
        "preamble\r\n--b0und\r\nContent-Disposition: form-data; name=\"metadata\"\r\n\r\n{\"a\": \"--b0un\"}\r\n"
        + "--b0und\r\nContent-Disposition: form-data; name=\"content\"; filename=\"w.txt\"\r\nContent-Type: text/plain\r\n\r\n"
        + "line one\r\n--b0un not the end\r\n\r\n--b0und--\r\nepilogue").utf8)

    func parse(_ body: [UInt8], pieces: Int) throws -> (filename: String?, type: String, bytes: [UInt8]) {
        var parser = Multipart.Parser(boundary: "b0und", field: "content")
        var found: (String?, String) = (nil, "")
        var bytes: [UInt8] = []
        var start = 0
        while start < body.count {
            let end = min(body.count, start + pieces)
            for e in try parser.feed(body[start..<end]) {
                switch e {
                case .part(let f, let t): found = (f, t)
                case .bytes(let b): bytes += b
                case .end: break
                }
            }
            start = end
        }
        try parser.finish()
        return (found.0, found.1, bytes)
    }

    @Test func anySplitOfTheBodyGivesTheSamePart() throws {
        for size in [1, 2, 3, 5, 7, 8, 9, 13, 64, Self.body.count] {
            let p = try parse(Self.body, pieces: size)
            #expect(p.filename == "w.txt" && p.type == "text/plain", "\(size)")
            #expect(p.bytes == Array("line one\r\n--b0un not the end\r\n".utf8), "pieces of \(size)")
        }
        let whole = try #require(Multipart.file(Self.body, contentType: "multipart/form-data; boundary=\"b0und\"", field: "content"))
        #expect(whole.name == "w.txt" && whole.bytes == Array("line one\r\n--b0un not the end\r\n".utf8))
    }

    @Test func brokenBodiesAreRefusedNeverTrapped() {
        let cases = ["", "--b0und", "--b0und\r\n", "--b0undXX", "--b0und--\r\n", "--b0und\r\nContent-Disposition: form-data; name=\"content\"\r\n\r\nno end",
                     "--b0und\r\n\r\nheaderless\r\n--b0und--", String(repeating: "h", count: 40000)]
        for text in cases {
            #expect(Multipart.file(Array(text.utf8), contentType: "multipart/form-data; boundary=b0und", field: "content") == nil, "\(text.prefix(40))")
        }
        // Headers that never end are refused once past the limit, not collected.
        var parser = Multipart.Parser(boundary: "b", field: "content", maxHeaderSize: 1024)
        #expect(throws: Multipart.Malformed.self) {
            _ = try parser.feed(Array("--b\r\n".utf8))
            for _ in 0..<100 { _ = try parser.feed([UInt8](repeating: 0x41, count: 100)) }
        }
        #expect(Multipart.boundary(of: "multipart/form-data") == nil && Multipart.boundary(of: "multipart/form-data; BOUNDARY=x") == "x")
    }
}
