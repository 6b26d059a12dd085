#if canImport(Glibc)
import Glibc
#endif
import FlowdirCore
@testable import FlowdirIO
import FlowdirTemplates
import FlowdirTestSupport
import Foundation
import Testing

/// `.flowdir/cache/workflow`: read only when nothing the load depended on
/// has changed, and then the same as loading afresh.
@Suite(.tags(.medium)) struct TemplateCacheTests {
    /// An instance (`inst/workflow.yaml`) whose tools are the template's
    /// (`tpl/tools`), with `inst/tools` and `home/tools` searched around them.
    final class Place {
        let dir: TemporaryDirectory
        init() throws {
            dir = try TemporaryDirectory()
            try dir.write("inst/workflow.yaml", Self.workflow)
            for (name, text) in Self.tools { try dir.write("tpl/tools/\(name).yaml", text) }
            try FileManager.default.createDirectory(atPath: dir.path + "/inst/.flowdir", withIntermediateDirectories: true)
        }

        static let workflow = """
            schema: flowdir/v1
            name: Cached
            nodes:
              - { id: load, kind: ImageLoader, title: Load it, params: { path: photo.png } }
              - { id: blur, kind: Blur, params: { sigma: 4 } }
              - { id: api, kind: Api }
              - { id: ghost, kind: NotInstalledYet }
            edges:
              - load.image -> blur.image
              - blur.image -> api.image
              - api.image -> ghost.x
            """
        static let tools = [
            "Blur": """
                kind: Blur
                summary: Gaussian blur
                inputs: { image: ImageRef }
                outputs: { image: { type: ImageRef, ext: png } }
                params: { sigma: { type: number, default: 2, min: 0, max: 100, summary: true } }
                run: { command: [convert, "{inputs.image}", -blur, "0x{params.sigma}", "{outputs.image}"] }
                """,
            "Api": """
                kind: Api
                inputs: { image: ImageRef }
                outputs: { image: ImageRef }
                run: { http: { endpoint: gpu, model: acme/api, outputs: { image: output } } }
                """,
        ]

        var instance: String { dir.path + "/inst" }
        var cacheFile: String { TemplateCache.file(instance) }

        func dirs(_ instance: String) -> [String] { [Path.join(instance, "tools"), dir.path + "/tpl/tools"] }
        var loader: TemplateLoader { TemplateLoader(fileSystem: LocalFileSystem(), userToolDirectories: [dir.path + "/home/tools"]) }

        func cached(at instance: String? = nil) -> LoadedTemplate {
            let instance = instance ?? self.instance
            return TemplateCache.load(instance: instance, workflowFile: Path.join(instance, "workflow.yaml"),
                                      toolDirectories: dirs(instance), loader: loader)
        }

        func fresh(at instance: String? = nil) -> LoadedTemplate {
            let instance = instance ?? self.instance
            return loader.load(path: Path.join(instance, "workflow.yaml"), toolDirectories: dirs(instance))
        }

        /// Changes when the cache is written again (written atomically: a new file).
        var cacheInode: UInt64? {
            var st = stat()
            return lstat(cacheFile, &st) == 0 ? UInt64(st.st_ino) : nil
        }
    }

    @Test func aLoadWritesTheCacheAndTheNextReadsIt() throws {
        let place = try Place()
        #expect(place.cacheInode == nil)
        let first = place.cached()
        #expect(first.isValid)
        #expect(first.diagnostics.map(\.code) == [.toolNotInstalled])
        let written = try #require(place.cacheInode)
        let second = place.cached()
        #expect(place.cacheInode == written, "read, not written again")
        #expect(second.fullDescription == place.fresh().fullDescription)
        #expect(first.fullDescription == second.fullDescription)
    }

    /// A folder no writer has opened (a fresh `git clone`) has no .flowdir/
    /// kept out of git: reading it makes none.
    @Test func noCacheIsMadeWhereNoWriterMadeFlowdir() throws {
        let place = try Place()
        try FileManager.default.removeItem(atPath: place.instance + "/.flowdir")
        #expect(place.cached().fullDescription == place.fresh().fullDescription)
        #expect(!FileManager.default.fileExists(atPath: place.instance + "/.flowdir"))
    }

    /// Each change to what the load read gives what a fresh load gives, and a new cache.
    @Test(arguments: [
        "workflow.yaml edited, same size", "a used tool edited, same size", "a tool shadowed by the instance's own",
        "the missing tool installed", "a used tool removed", "an unused tool dir appears empty",
    ])
    func aChangeToWhatTheLoadReadIsAMiss(_ change: String) throws {
        let place = try Place()
        _ = place.cached()
        let before = try #require(place.cacheInode)
        let d = place.dir
        switch change {
        case "workflow.yaml edited, same size":
            try d.write("inst/workflow.yaml", Place.workflow.replacing("Load it", with: "Load us"))
        case "a used tool edited, same size":
            try d.write("tpl/tools/Blur.yaml", Place.tools["Blur"]!.replacing("Gaussian", with: "GaussiaN"))
        case "a tool shadowed by the instance's own":
            try d.write("inst/tools/Api.yml", Place.tools["Api"]!.replacing("v1", with: "v2"))
        case "the missing tool installed":
            try d.write("home/tools/NotInstalledYet.json", #"{"kind": "NotInstalledYet", "inputs": {"x": "ImageRef"}, "run": {"command": ["true"]}}"#)
        case "a used tool removed":
            try FileManager.default.removeItem(atPath: d.path + "/tpl/tools/Api.yaml")
        default:
            // Nothing the load depended on: still a hit.
            try FileManager.default.createDirectory(atPath: d.path + "/home/tools", withIntermediateDirectories: true)
        }
        let loaded = place.cached()
        #expect(loaded.fullDescription == place.fresh().fullDescription, "\(change)")
        if change.hasPrefix("an unused") {
            #expect(place.cacheInode == before)
        } else {
            #expect(place.cacheInode != before, "\(change): written again")
            // And that new cache is then read.
            let now = place.cacheInode
            #expect(place.cached().fullDescription == loaded.fullDescription)
            #expect(place.cacheInode == now)
        }
    }

    @Test func theChangesAreSeenInTheResult() throws {
        let place = try Place()
        _ = place.cached()
        try place.dir.write("inst/tools/Api.yaml", Place.tools["Api"]!.replacing("v1", with: "v2"))
        try place.dir.write("home/tools/NotInstalledYet.yaml", "kind: NotInstalledYet\ninputs: { x: ImageRef }\nrun: { command: [\"true\"] }\n")
        let loaded = place.cached()
        #expect(loaded.graph?.node("api")?.tool?.file == place.instance + "/tools/Api.yaml")
        #expect(loaded.diagnostics.isEmpty)
    }

    /// What a cached load quotes from is the text a fresh load quotes, BOM and all.
    @Test func aWorkflowWithAByteOrderMarkReadsTheSame() throws {
        let place = try Place()
        try ("\u{FEFF}" + Place.workflow).write(toFile: place.instance + "/workflow.yaml", atomically: true, encoding: .utf8)
        _ = place.cached()
        let written = place.cacheInode
        #expect(place.cached().fullDescription == place.fresh().fullDescription)
        #expect(place.cacheInode == written)
    }

    @Test func aDamagedCacheIsIgnoredAndWrittenAgain() throws {
        let place = try Place()
        let expected = place.cached().fullDescription
        let good = try #require(FileManager.default.contents(atPath: place.cacheFile))
        let damages: [(String, Data)] = [
            ("a byte changed", { var d = good; d[d.count / 2] ^= 0x40; return d }()),
            ("cut", good.prefix(good.count / 3)),
            ("empty", Data()),
            ("not a cache", Data("flowdir workflow cache, but not really".utf8)),
        ]
        for (what, bytes) in damages {
            try bytes.write(to: URL(fileURLWithPath: place.cacheFile))
            let before = place.cacheInode
            #expect(place.cached().fullDescription == expected, "\(what)")
            #expect(place.cacheInode != before, "\(what): written again")
            #expect(FileManager.default.contents(atPath: place.cacheFile) == good, "\(what)")
        }
    }

    @Test func anotherBinarysCacheIsNotRead() throws {
        let place = try Place()
        _ = place.cached()
        let bytes = try LocalFileSystem().readFile(place.cacheFile, limit: 1 << 30)
        var key = TemplateCache.Key(binary: TemplateCache.binaryIdentity(), instance: place.instance,
                                    workflowFile: place.instance + "/workflow.yaml",
                                    searchPath: place.dirs(place.instance) + [place.dir.path + "/home/tools"],
                                    workflow: try LocalFileSystem().readFile(place.instance + "/workflow.yaml", limit: 1 << 20))
        #expect(TemplateCache.read(bytes, key: key, fileSystem: LocalFileSystem()) != nil)
        key.binary = "another build"
        #expect(TemplateCache.read(bytes, key: key, fileSystem: LocalFileSystem()) == nil)
    }

    /// `run` names an instance by its full path, `show inst` by what was
    /// typed; a moved instance has a new name: all read the same cache.
    @Test func theInstanceNamedAnotherWayOrMovedReadsTheSameCache() throws {
        let place = try Place()
        _ = place.cached()
        let written = try #require(place.cacheInode)
        let link = place.dir.path + "/link"
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: place.instance)
        let viaLink = place.cached(at: link + "/")
        #expect(viaLink.fullDescription == place.fresh(at: link + "/").fullDescription)
        #expect(viaLink.graph?.template.file == link + "/workflow.yaml")
        #expect(place.cacheInode == written)
        let moved = place.dir.path + "/elsewhere"
        try FileManager.default.moveItem(atPath: place.instance, toPath: moved)
        let there = place.cached(at: moved)
        #expect(there.fullDescription == place.fresh(at: moved).fullDescription)
        var st = stat()
        #expect(lstat(TemplateCache.file(moved), &st) == 0 && UInt64(st.st_ino) == written)
    }
}
