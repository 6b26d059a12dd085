import FlowdirCore
import FlowdirTestSupport
import Testing

/// Paths are taken apart at their bytes `/` and `.`, as the kernel does.
@Suite(.tags(.small)) struct PathTests {
    @Test(arguments: [
        ("/a/b/c.txt", "/a/b", "c.txt"), ("c.txt", ".", "c.txt"), ("/c", "/", "c"), ("/", "/", ""),
        ("a/b/", "a/b", "b"), ("a/b//", "a/b/", "b"), ("//", "/", ""), ("", ".", ""),
        ("dé/fé.png", "dé", "fé.png"), ("/x/é/", "/x/é", "é"), ("é", ".", "é"),
    ])
    func directoryAndBasename(path: String, directory: String, basename: String) {
        #expect(Path.directory(of: path) == directory)
        #expect(Path.basename(path) == basename)
    }

    @Test func extensions() {
        #expect(Path.fileExtension("out/image.PNG") == "png")
        #expect(Path.fileExtension("a.tar.gz") == "gz")
        #expect(Path.fileExtension(".profile") == "")
        #expect(Path.fileExtension("dir.d/file") == "")
        #expect(Path.fileExtension("fé.jpé") == "jpé")
        #expect(Path.removingExtension("mask.png") == "mask")
        #expect(Path.removingExtension(".hidden") == ".hidden")
        #expect(Path.removingExtension("plain") == "plain")
        #expect(Path.join("a", "b") == "a/b")
        #expect(Path.join("a/", "b") == "a/b")
        #expect(Path.join("a", "/b") == "/b")
        #expect(Path.join(".", "b") == "b")
    }
}
