import FlowdirCore
import FlowdirTestSupport
import Testing

/// How files from instances are handed to a browser, and how failed
/// tokens are counted (docs/security.md).
@Suite(.tags(.small)) struct ServedTypeTests {
    static let png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 13]
    static let svg = Array(#"<svg xmlns="http://www.w3.org/2000/svg"><script>fetch('/api/new')</script></svg>"#.utf8)

    @Test func imagesAreRecognisedByTheirBytesNeverByTheirName() {
        #expect(ServedType.of(head: Self.png, fileName: "out.png") == ServedType(contentType: "image/png", inline: true))
        #expect(ServedType.of(head: Self.png, fileName: "out.bin") == ServedType(contentType: "image/png", inline: true))
        #expect(ServedType.of(head: [0xFF, 0xD8, 0xFF, 0xE0], fileName: "a.jpg").contentType == "image/jpeg")
        #expect(ServedType.of(head: Array("GIF89a".utf8), fileName: "a.gif").contentType == "image/gif")
        #expect(ServedType.of(head: Array("RIFF\0\0\0\0WEBP".utf8), fileName: "a.webp").contentType == "image/webp")
        // An SVG (or HTML) is never shown, whatever it is called.
        for name in ["logo.svg", "logo.png", "page.html", "page.htm", "x.xhtml", "unknown", "a.js"] {
            #expect(ServedType.of(head: Self.svg, fileName: name) == .download, "\(name)")
        }
        #expect(ServedType.of(head: Array("<html><script>".utf8), fileName: "out.jpg") == .download)
    }

    @Test func mediaPDFJSONAndTextAreShownTheRestDownloaded() {
        #expect(ServedType.of(head: Array("\0\0\0\u{18}ftypisom".utf8), fileName: "v.mp4") == ServedType(contentType: "video/mp4", inline: true))
        #expect(ServedType.of(head: Array("\0\0\0\u{18}ftypM4A ".utf8), fileName: "a.m4a").contentType == "audio/mp4")
        #expect(ServedType.of(head: Array("RIFF\0\0\0\0WAVE".utf8), fileName: "a.wav").contentType == "audio/wav")
        #expect(ServedType.of(head: Array("ID3\u{3}".utf8), fileName: "a.mp3").contentType == "audio/mpeg")
        #expect(ServedType.of(head: Array("%PDF-1.7".utf8), fileName: "r.pdf") == ServedType(contentType: "application/pdf", inline: true))
        #expect(ServedType.of(head: Array("{\"a\": 1}".utf8), fileName: "r.json") == ServedType(contentType: "application/json", inline: true))
        #expect(ServedType.of(head: Array("<b>hi</b>".utf8), fileName: "notes.TXT").contentType == "text/plain; charset=utf-8")
        #expect(ServedType.of(head: Array("a,b".utf8), fileName: "t.csv").inline)
        #expect(ServedType.of(head: [0x49, 0x49, 0x2A, 0x00], fileName: "d.tiff") == .download)
        #expect(ServedType.of(head: [1, 2, 3], fileName: "model.safetensors") == .download)
        #expect(ServedType.of(head: [], fileName: "") == .download)
    }

    @Test func tenDifferentWrongTokensInAMinuteLockAnAddressForTheRestOfIt() {
        var t = FailureThrottle(limit: 10, window: 60)
        for i in 0..<9 { t.failed("10.0.0.2", presented: "guess-\(i)", now: Double(i)) }
        #expect(t.wait("10.0.0.2", now: 9) == nil)
        t.failed("10.0.0.2", presented: "guess-9", now: 9)
        // Locked until the first guess (at 0 s) is a minute old.
        #expect(t.wait("10.0.0.2", now: 10) == 50)
        #expect(t.wait("10.0.0.2", now: 59.5) == 1)
        #expect(t.wait("10.0.0.2", now: 60) == nil)
        // Another address is not touched.
        #expect(t.wait("10.0.0.3", now: 10) == nil)
    }

    @Test func theSameWrongValueAgainCountsOnce() {
        var t = FailureThrottle(limit: 3, window: 60)
        for i in 0..<50 { t.failed("127.0.0.1", presented: "stale-cookie", now: Double(i) / 10) }
        #expect(t.wait("127.0.0.1", now: 5) == nil)
        t.failed("127.0.0.1", presented: "a", now: 6)
        t.failed("127.0.0.1", presented: "b", now: 6)
        #expect(t.wait("127.0.0.1", now: 6) != nil)
    }

    @Test func whatIsKeptIsBounded() {
        var t = FailureThrottle(limit: 2, window: 60, maxAddresses: 100)
        for i in 0..<1000 { t.failed("10.0.\(i / 256).\(i % 256)", presented: "x", now: Double(i) / 1000) }
        #expect(t.addresses <= 100)
        // The newest are the ones kept.
        t.failed("10.0.3.231", presented: "y", now: 1)
        #expect(t.wait("10.0.3.231", now: 1) != nil)
        // Past the window nothing is held.
        t.failed("10.9.9.9", presented: "z", now: 200)
        #expect(t.addresses <= 1)
    }
}
