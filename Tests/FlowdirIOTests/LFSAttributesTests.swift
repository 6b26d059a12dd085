import FlowdirCore
import FlowdirTestSupport
import Foundation
import Testing

/// `.gitattributes` lines for large files, as git itself reads them.
@Suite(.tags(.medium)) struct LFSAttributesTests {
    let odd = ["nodes/a/out/image.png", "nodes/b c/out/x y.png", "nodes/star*/out/q?.png", "nodes/[x]/out/#1.png", "inbox/\"q\".png", "nodes/!b/out/a\\b.png"]

    @Test func gitMarksExactlyThePathsFlowdirNames() throws {
        let dir = try TemporaryDirectory()
        try GitCLI.run(["init", "-q", dir.path], in: dir.path)
        let marked = Set(odd.prefix(4) + odd.suffix(2))
        let text = try #require(LFSAttributes.text("# mine\n*.psd binary\n", marking: marked))
        try text.write(toFile: dir.path + "/.gitattributes", atomically: true, encoding: .utf8)
        let others = ["nodes/a/out/image.png.bak", "nodes/bc/out/xy.png", "nodes/starX/out/qZ.png", "nodes/x/out/#1.png", "deeper/nodes/a/out/image.png"]
        for path in odd + others {
            let out = try GitCLI.run(["check-attr", "filter", "--", path], in: dir.path)
            #expect(out.hasSuffix(": filter: \(marked.contains(path) ? "lfs" : "unspecified")\n"), "\(path): \(out)")
        }
        #expect(LFSAttributes.paths(in: text) == marked)
        #expect(text.hasPrefix("# mine\n*.psd binary\n"))
        // Already so: nothing to write.
        #expect(LFSAttributes.text(text, marking: marked) == nil)
    }

    @Test func pathsComeAndGoAndAPersonsLinesStay() throws {
        var text = try #require(LFSAttributes.text("", marking: ["nodes/a/out/x.png"]))
        text += "*.mov binary\n"
        let next = try #require(LFSAttributes.text(text, marking: ["nodes/b/out/y.png"]))
        #expect(LFSAttributes.paths(in: next) == ["nodes/b/out/y.png"])
        #expect(next.contains("*.mov binary\n"))
        // A line typed twice, or a pattern a person added with our attributes, is not ours to keep as a path.
        let doubled = next + "/nodes/b/out/y.png filter=lfs diff=lfs merge=lfs -text\n"
        #expect(LFSAttributes.text(doubled, marking: ["nodes/b/out/y.png"]).map(LFSAttributes.paths(in:)) == ["nodes/b/out/y.png"])
        #expect(LFSAttributes.paths(in: "*.png filter=lfs diff=lfs merge=lfs -text\n").isEmpty)
    }

    /// Found by the lfs-attributes fuzz target: a path opening with a
    /// combining mark made one Character with the `/` before it, and its
    /// pattern no longer read back as the path.
    @Test func aPathOpeningWithACombiningMarkIsItsOwnPattern() throws {
        let path = "\u{0359}x lfs -text"
        let written = try #require(LFSAttributes.text("", marking: [path]))
        #expect(LFSAttributes.paths(in: written) == [path], "\(written)")
    }

    /// Found by the lfs-attributes fuzz target: lines were split by
    /// Characters, and a person's line ending in CR ran into the next one.
    @Test func aPersonsLineEndingInACarriageReturnIsKept() throws {
        let mine = "*.psd binary\r\n/old.bin filter=lfs diff=lfs merge=lfs -text\n"
        let written = try #require(LFSAttributes.text(mine, marking: ["new.bin"]))
        #expect(written.hasPrefix("*.psd binary\r\n"), "\(written)")
        #expect(LFSAttributes.paths(in: written) == ["new.bin"], "\(written)")
        #expect(LFSAttributes.paths(in: mine) == ["old.bin"])
    }

    /// Found by the lfs-attributes fuzz target: a path holding a line break
    /// was written as it is, two lines, the second marking another path.
    @Test func aPathWithALineBreakIsNeverWrittenAsTwoLines() throws {
        let written = try #require(LFSAttributes.text("", marking: ["a\nb/c.bin", "ok.bin"]))
        #expect(LFSAttributes.paths(in: written) == ["ok.bin"], "\(written)")
        #expect(!written.contains("b/c.bin"))
    }
}
