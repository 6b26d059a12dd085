import FlowdirCore
import FlowdirIO
import FlowdirTemplates
import FlowdirTestSupport
import Foundation
import Testing

/// Bad input never crashes and always gets a clear answer, quickly. The
/// one-second bound is the acceptance criterion, far above what any of these
/// take (a few milliseconds); it guards against a hang, not a slowdown. It
/// is the thread's CPU time: a machine busy with the rest of the suite does
/// not make a quick parse look slow.
@Suite(.tags(.small)) struct RobustnessTests {
    static func cpuTime(_ body: () -> Void) -> Duration {
        func now() -> Duration {
            var t = timespec()
            clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t)
            return .seconds(t.tv_sec) + .nanoseconds(t.tv_nsec)
        }
        let start = now()
        body()
        return now() - start
    }

    func check(_ bytes: [UInt8], name: String = "t.yaml") -> (LoadedTemplate, Duration) {
        let fs = InMemoryFileSystem()
        fs.write(name, bytes: bytes)
        var result: LoadedTemplate!
        let elapsed = Self.cpuTime { result = TemplateLoader(fileSystem: fs).load(path: name) }
        return (result, elapsed)
    }

    func onlyError(_ r: LoadedTemplate) -> Diagnostic? { r.diagnostics.errors.count == 1 ? r.diagnostics.errors[0] : nil }

    @Test func binaryGarbage() {
        var rng = SystemRandomNumberGenerator()
        for name in ["g.yaml", "g.json", "g.bin"] {
            let bytes = (0..<100_000).map { _ in UInt8.random(in: 0...255, using: &rng) }
            let (r, t) = check(bytes, name: name)
            #expect(onlyError(r)?.code == .malformedFile)
            #expect(t < .seconds(1))
        }
        // Garbage without NULs or bad UTF-8 is just bad syntax.
        let (r, _) = check(Array("{[}:,::]]]{{\"\\".utf8), name: "g.yaml")
        #expect(onlyError(r)?.code == .malformedFile)
    }

    @Test func emptyAndBlankFiles() {
        for text in ["", "   \n\n", "# only a comment\n", "---\n"] {
            let (r, _) = check(Array(text.utf8))
            #expect(onlyError(r)?.message == "the file is empty", "\(text)")
        }
        let (j, _) = check([], name: "t.json")
        #expect(onlyError(j)?.message == "the file is empty")
    }

    @Test func aFiftyMegabyteFileIsRefusedUnread() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("flowdir-big-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("big.yaml").path
        // A sparse file: 50 MB on paper, nothing on disk.
        #expect(FileManager.default.createFile(atPath: path, contents: Data("schema: x\n".utf8)))
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        try handle.truncate(atOffset: 50_000_000)
        try handle.close()
        var result: LoadedTemplate!
        let t = Self.cpuTime { result = TemplateLoader(fileSystem: LocalFileSystem()).load(path: path) }
        #expect(onlyError(result)?.message == "the file is 47.7 MiB; a template may be at most 16.0 MiB")
        #expect(t < .seconds(1))
    }

    @Test func aLargeValidTemplateIsNotRefused() {
        // 10 MB of real content is within the limit and parses.
        var text = "schema: app.workflow/v2\nname: big\nnodes:\n"
        for i in 0..<2_000 {
            text += "  - id: n\(i)\n    kind: ParamConfirm\n    params: { note: \"\(String(repeating: "x", count: 4_000))\" }\n"
        }
        let (r, t) = check(Array(text.utf8))
        #expect(r.isValid)
        #expect(t < .seconds(5))
    }

    @Test func deepNesting() {
        for (name, text) in [
            ("d.json", String(repeating: "[", count: 100_000)),
            ("d.jsonc", String(repeating: "{\"a\":", count: 100_000)),
            ("d.yaml", "a: " + String(repeating: "[", count: 100_000)),
            ("d.yaml", "a: " + String(repeating: "{b: ", count: 50_000)),
            ("d.yaml", (0..<5_000).map { String(repeating: " ", count: $0) + "k:\n" }.joined()),
            ("d.yaml", String(repeating: "- ", count: 50_000) + "x\n"),
        ] {
            let (r, t) = check(Array(text.utf8), name: name)
            let e = onlyError(r)
            #expect(e?.code == .malformedFile)
            #expect(e?.message.hasPrefix("nesting is deeper than") == true, "\(e?.message ?? "none")")
            #expect(t < .seconds(1))
        }
    }

    @Test func billionLaughs() {
        let bomb = """
            a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
            b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
            c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
            d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
            e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
            f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
            g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
            h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
            i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]
            """
        let (r, t) = check(Array(bomb.utf8))
        #expect(onlyError(r)?.message == "the document expands to too many values (aliases that refer to aliases?)")
        #expect(t < .seconds(1))
        // Modest, honest use of aliases still works.
        let (ok, _) = check(Array("schema: app.workflow/v2\nname: a\np: &p { note: hi }\nnodes:\n  - { id: x, kind: ParamConfirm, params: *p }\n  - { id: y, kind: ParamConfirm, params: *p }\n".utf8))
        #expect(ok.isValid)
    }

    @Test func unknownKeysAreWarningsThatNameTheKey() {
        let (r, t) = check(Array("""
            schema: app.workflow/v2
            name: Unknown keys
            author: me
            nodes:
              - id: l
                kind: ImageLoader
                parms: { path: a.png }
                colour: blue
            """.utf8))
        #expect(r.isValid)
        #expect(r.diagnostics.map(\.severity) == [.warning, .warning, .warning])
        #expect(r.diagnostics.sortedByLocation().map(\.message) == [
            "unknown key 'author' in the template; it is ignored",
            "unknown key 'parms' in node 'l'; it is ignored",
            "unknown key 'colour' in node 'l'; it is ignored",
        ])
        #expect(r.diagnostics.sortedByLocation()[1].hint == "did you mean 'params'?")
        #expect(t < .seconds(1))
    }

    @Test func invalidUTF8AndBOM() {
        let (r, _) = check(Array("schema: app.workflow/v2\nname: caf".utf8) + [0xE9, 0x0A])
        #expect(onlyError(r)?.message == "the file is not valid UTF-8 (byte 0xe9 at offset 33)")
        #expect(onlyError(r)?.location?.line == 2)
        let (bom, _) = check([0xEF, 0xBB, 0xBF] + Array("schema: app.workflow/v2\nname: b\nnodes: []\n".utf8))
        #expect(bom.isValid)
    }
}
