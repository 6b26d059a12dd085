#if canImport(Glibc)
import Glibc
#endif
import FlowdirTestSupport
import Foundation
import Testing

/// The pages of `flowdir serve` in a real browser (Debian's chromium,
/// chromium-driver and Selenium, which `scripts/setup.sh` installs):
/// `Python/browser_ui.py` drives them; this makes the instances, starts the
/// built binary, and runs it. Screenshots of each screen are kept in
/// `.build/browser-screenshots/`.
@Suite(.serialized, .tags(.large, .browser), Component.browser.needed) struct BrowserTests {
    static let screenshots = RepositoryPaths.root + "/.build/browser-screenshots"
    /// The venv `scripts/setup.sh` makes for these tests (Selenium, Pillow).
    static var venv: String { Component.browserVenv }

    /// The seed's flow with its stylize step local (ImageMagick), and the
    /// other instances the script uses.
    static func makeInstances(in dir: TemporaryDirectory) throws -> [String: String] {
        let repo = RepositoryPaths.root
        let fm = FileManager.default
        try fm.createDirectory(atPath: dir.path + "/root", withIntermediateDirectories: true)
        try fm.copyItem(atPath: repo + "/workflows/photo.png", toPath: dir.path + "/root/photo.png")
        try fm.copyItem(atPath: repo + "/workflows/tools", toPath: dir.path + "/wf/tools")
        let seed = try String(contentsOfFile: repo + "/workflows/stylize-with-mask.jsonc", encoding: .utf8)
            .replacingOccurrences(of: "\"StylizeRemote\"", with: "\"StylizeLocal\"")
            .replacingOccurrences(of: ",\n      \"resources\": { \"class\": \"remote\" }", with: "")
        try dir.write("wf/seed.jsonc", seed)
        let rr = try String(contentsOfFile: repo + "/workflows/review-and-render.yaml", encoding: .utf8)
            .replacingOccurrences(of: "edges:", with: """
                  - id: extra
                    kind: Choice
                    outputs: { choice: JSONRef }
                    await: { type: choice, choices: [yes, no], allowSkip: true, urgency: low }
                edges:
                """)
        try dir.write("wf/rr.yaml", rr)
        try dir.write("wf/tools/Nap.yaml", """
            kind: Nap
            outputs: { out: TextRef }
            run:
              command: [sh, -c, 'echo napping; sleep 300; echo done > "$0"', "{outputs.out}"]
            """)
        try dir.write("wf/slow.yaml", "schema: app.workflow/v2\nname: Slow job\nnodes:\n  - { id: nap, kind: Nap }\n")
        try dir.write("wf/tools/Note.yaml", """
            kind: Note
            outputs: { out: TextRef }
            run:
              command: [sh, -c, 'echo noted > "$0"', "{outputs.out}"]
            """)
        try dir.write("wf/done.yaml", "schema: app.workflow/v2\nname: Finished notes\nnodes:\n  - { id: note, kind: Note }\n")
        // A template a root offers New from Template (its tool beside it).
        try dir.write("root/workflows/done.yaml", "schema: app.workflow/v2\nname: Finished notes\nnodes:\n  - { id: note, kind: Note }\n")
        try dir.write("root/workflows/tools/Note.yaml", try String(contentsOfFile: dir.path + "/wf/tools/Note.yaml", encoding: .utf8))
        try dir.write("wf/masked.yaml", """
            schema: app.workflow/v2
            name: Mask a photo
            nodes:
              - { id: load1, kind: ImageLoader, params: { path: \(dir.path)/root/photo.png } }
              - id: mask1
                kind: UserMaskEditor
                inputs: { image: ImageRef }
                outputs: { mask: MaskRef }
                await: { type: draw_mask }
            edges: [load1.image -> mask1.image]
            """)
        let env = ["XDG_CONFIG_HOME": dir.path + "/config", "FLOWDIR_CONFIG": "/dev/null", "XDG_STATE_HOME": dir.path + "/state"]
        for (name, template, title) in [("seed", "seed.jsonc", "Stylize with user mask"), ("rr", "rr.yaml", "Review and render"),
                                        ("slow", "slow.yaml", "Slow job"), ("done", "done.yaml", "Finished notes"),
                                        ("phone", "masked.yaml", "Mask on a phone"), ("empty", "masked.yaml", "An empty mask")] {
            let r = try CommandRunner.flowdir(["new", "wf/" + template, "root/" + name, "--title", title], in: dir.path, environment: env)
            #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        }
        #expect(try CommandRunner.flowdir(["run", "root/done"], in: dir.path, environment: env).status == 0)
        return env
    }

    @Test func thePagesWorkInARealBrowser() async throws {
        try await offPool {
            #expect(FileManager.default.isExecutableFile(atPath: "/usr/bin/chromium"), "no chromium: `bash scripts/setup.sh` installs it")
            #expect(FileManager.default.isExecutableFile(atPath: Self.venv + "/bin/python"), "no venv at \(Self.venv): `bash scripts/setup.sh` makes it")
            let dir = try TemporaryDirectory()
            let env = try Self.makeInstances(in: dir)
            let serve = try ServeCommandTests.ServeProcess([dir.path + "/root"], in: dir.path, environment: env, log: dir.path + "/serve.log")
            let url = serve.url
            let script = RepositoryPaths.root + "/Tests/FlowdirCommandsTests/Python/browser_ui.py"
            // BROWSER_ONLY=seed,phone runs only those checks (while working on the pages).
            let only = ProcessInfo.processInfo.environment["BROWSER_ONLY"].map { ["--only", $0] } ?? []
            // The server stays up until the script is done (not only until its URL was last read).
            let r = try withExtendedLifetime(serve) {
                try CommandRunner.run(Self.venv + "/bin/python", [script, "--url", url, "--root", dir.path + "/root",
                                                                 "--artifacts", Self.screenshots] + only)
            }
            let log = (try? String(contentsOfFile: dir.path + "/serve.log", encoding: .utf8)) ?? ""
            #expect(r.status == 0, "\(r.stdout)\(r.stderr)\n--- flowdir serve:\n\(log.suffix(4000))")
            #expect(r.stdout.contains("0 failures"))
        }
    }

    /// A video output, opened from its card, plays in the page and seeks:
    /// `Python/browser_media.py` checks from Chromium's network log that it
    /// was fetched with `Range` and answered `206`, and that the player
    /// can seek to its end, with the server's memory flat (docs/serve.md).
    /// The video is a minute of H.264 in MP4 by ffmpeg, ~50 MB (a large
    /// file, kept beside git); its tile shows its first frame.
    /// One whose content is not on this machine says so on its tile.
    @Test(.tags(.ffmpeg), Component.ffmpeg.needed) func aVideoOutputSeeksInARealBrowser() async throws {
        try await offPool {
            #expect(FileManager.default.isExecutableFile(atPath: "/usr/bin/chromium"), "no chromium: `bash scripts/setup.sh` installs it")
            let dir = try TemporaryDirectory()
            let env = ["XDG_CONFIG_HOME": dir.path + "/config", "FLOWDIR_CONFIG": "/dev/null", "XDG_STATE_HOME": dir.path + "/state"]
            let python = RepositoryPaths.root + "/Tests/FlowdirCommandsTests/Python"
            try FileManager.default.createDirectory(atPath: dir.path + "/root", withIntermediateDirectories: true)
            // A minute of H.264 in MP4, ~50 MB (noise does not compress), made by ffmpeg.
            #expect(FileManager.default.isExecutableFile(atPath: "/usr/bin/ffmpeg"), "no ffmpeg: `bash scripts/setup.sh` installs it")
            try dir.write("wf/tools/Clip.yaml", """
                kind: Clip
                outputs: { clip: { type: VideoRef, ext: mp4 } }
                run:
                  command: [ffmpeg, -nostdin, -v, error, -f, lavfi, -i, "testsrc2=s=640x360:r=24:d=60", -vf, "noise=alls=60:allf=t",
                            -c:v, libx264, -preset, ultrafast, -b:v, 7M, -maxrate, 7M, -bufsize, 2M, -pix_fmt, yuv420p,
                            -movflags, +faststart, -f, mp4, "{outputs.clip}"]
                """)
            try dir.write("wf/clip.yaml", "schema: app.workflow/v2\nname: A clip\nnodes:\n  - { id: clip, kind: Clip }\n")
            for name in ["clip", "gone"] {
                #expect(try CommandRunner.flowdir(["new", "wf/clip.yaml", "root/" + name], in: dir.path, environment: env).status == 0)
                let ran = try CommandRunner.flowdir(["run", "root/" + name], in: dir.path, environment: env)
                #expect(ran.status == 0, "\(ran.stdout)\(ran.stderr)")
            }
            // `gone`'s video as a clone (or a free) leaves it: the pointer git holds, in place of the file.
            let pointer = try GitCLI.run(["show", "HEAD:nodes/clip/out/clip.mp4"], in: dir.path + "/root/gone")
            #expect(pointer.hasPrefix("version https://git-lfs.github.com/spec/v1"))
            try dir.write("root/gone/nodes/clip/out/clip.mp4", pointer)
            let log = dir.path + "/serve.log"
            let serve = try ServeCommandTests.ServeProcess([dir.path + "/root"], in: dir.path, environment: env, log: log)
            let r = try withExtendedLifetime(serve) {
                try CommandRunner.run(Self.venv + "/bin/python", [python + "/browser_media.py", "--url", serve.url, "--root", dir.path + "/root",
                                                                 "--artifacts", Self.screenshots, "--serve-pid", String(serve.process.processIdentifier)])
            }
            // Its figures (the requests, the server's memory), kept beside the screenshots.
            try? r.stdout.write(toFile: Self.screenshots + "/media.txt", atomically: true, encoding: .utf8)
            let served = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            #expect(r.status == 0, "\(r.stdout)\(r.stderr)\n--- flowdir serve:\n\(served.suffix(4000))")
            #expect(r.stdout.contains("0 failures"), "\(r.stdout)")
        }
    }

    /// A page on another `127.0.0.1` port, opened in the browser that holds
    /// the pages' cookie, tries every route that changes something (and
    /// reads, embeds and navigations); an SVG output with a script is
    /// opened from the pages. `Python/browser_hostile.py` drives both and
    /// checks that every instance is as it was and no script ran on the
    /// pages' origin (docs/security.md).
    @Test func aHostilePageOnAnotherPortChangesNothing() async throws {
        try await offPool {
            #expect(FileManager.default.isExecutableFile(atPath: "/usr/bin/chromium"), "no chromium: `bash scripts/setup.sh` installs it")
            let dir = try TemporaryDirectory()
            let env = try Self.makeInstances(in: dir)
            // An output any tool might write: an SVG whose script deletes its instance, with the cookie or a token in its URL.
            try dir.write("wf/evil.svg", """
                <svg xmlns="http://www.w3.org/2000/svg" width="120" height="80"><rect width="120" height="80" fill="red"/>\
                <script>document.title = 'svg-ran'; var id = location.pathname.split('/')[3];\
                fetch('/api/instances/' + id, {method: 'DELETE', credentials: 'include', headers: {'Content-Type': 'application/json'}, body: '{}'})\
                .then(function (r) { document.title = 'svg-ran ' + r.status; });\
                var t = new URLSearchParams(location.search).get('token');\
                if (t) fetch('/api/instances/' + id, {method: 'DELETE', headers: {'Authorization': 'Bearer ' + t, 'Content-Type': 'application/json'}, body: '{}'});\
                </script></svg>
                """)
            try dir.write("wf/tools/Draw.yaml", """
                kind: Draw
                outputs: { picture: { type: FileRef, ext: svg } }
                run:
                  command: [cp, "\(dir.path)/wf/evil.svg", "{outputs.picture}"]
                """)
            try dir.write("wf/pic.yaml", "schema: app.workflow/v2\nname: A picture\nnodes:\n  - { id: draw, kind: Draw }\n")
            #expect(try CommandRunner.flowdir(["new", "wf/pic.yaml", "root/pic", "--title", "A picture"], in: dir.path, environment: env).status == 0)
            #expect(try CommandRunner.flowdir(["run", "root/pic"], in: dir.path, environment: env).status == 0)
            let log = dir.path + "/serve.log"
            let serve = try ServeCommandTests.ServeProcess([dir.path + "/root"], in: dir.path, environment: env, log: log)
            let script = RepositoryPaths.root + "/Tests/FlowdirCommandsTests/Python/browser_hostile.py"
            let r = try withExtendedLifetime(serve) {
                try CommandRunner.run(Self.venv + "/bin/python", [script, "--url", serve.url, "--root", dir.path + "/root",
                                                                 "--serve-log", log, "--artifacts", Self.screenshots])
            }
            let served = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            #expect(r.status == 0, "\(r.stdout)\(r.stderr)\n--- flowdir serve:\n\(served.suffix(4000))")
            #expect(r.stdout.contains("0 failures"))
            for name in ["rr", "slow", "done", "pic"] {
                #expect(FileManager.default.fileExists(atPath: dir.path + "/root/\(name)/instance.yaml"), "\(name) is gone")
            }
        }
    }
    /// A card's run history, Compare and Retry from a run, and a phone
    /// whose server went away for 10 s while a command changed the
    /// instance (docs/serve.md, "Run history" and "On a phone").
    /// `Python/browser_history.py` starts `flowdir serve` itself, so that it
    /// can stop it and start it again on the same port and token.
    @Test func aCardsRunHistoryAndAPhoneThatComesBack() async throws {
        try await offPool {
            #expect(FileManager.default.isExecutableFile(atPath: "/usr/bin/chromium"), "no chromium: `bash scripts/setup.sh` installs it")
            let dir = try TemporaryDirectory()
            let env = ["XDG_CONFIG_HOME": dir.path + "/config", "FLOWDIR_CONFIG": "/dev/null", "XDG_STATE_HOME": dir.path + "/state"]
            try FileManager.default.createDirectory(atPath: dir.path + "/root", withIntermediateDirectories: true)
            try dir.write("wf/tools/Paint.yaml", """
                kind: Paint
                outputs: { image: { type: ImageRef, ext: png } }
                params:
                  color: { type: string, default: red }
                run:
                  command: [convert, -size, 64x64, "xc:{params.color}", "{outputs.image}"]
                """)
            try dir.write("wf/tools/Frame.yaml", """
                kind: Frame
                inputs: { image: ImageRef }
                outputs: { image: { type: ImageRef, ext: png } }
                params:
                  width: { type: integer, default: 4, min: 1, max: 50 }
                presets: { thin: { width: 1 }, thick: { width: 12 } }
                run:
                  command: [convert, "{inputs.image}", -bordercolor, black, -border, "{params.width}", "{outputs.image}"]
                """)
            try dir.write("wf/hist.yaml", """
                schema: app.workflow/v2
                name: History
                nodes:
                  - { id: paint, kind: Paint }
                  - { id: frame, kind: Frame }
                edges: [paint.image -> frame.image]
                """)
            func flowdir(_ args: [String]) throws {
                let r = try CommandRunner.flowdir(args, in: dir.path, environment: env)
                #expect(r.status == 0, "flowdir \(args.joined(separator: " ")): \(r.stdout)\(r.stderr)")
            }
            func edit(_ file: String, _ from: String, _ to: String) throws {
                let text = try String(contentsOfFile: dir.path + "/" + file, encoding: .utf8)
                try dir.write(file, text.replacingOccurrences(of: from, with: to))
            }
            // frame: run 1 on a red square, width 4; run 2 on a blue one; run 3 with width 8.
            try flowdir(["new", "wf/hist.yaml", "root/hist"])
            try flowdir(["run", "root/hist"])
            try edit("root/hist/nodes/paint/params.yaml", "color: red", "color: blue")
            try flowdir(["rerun", "root/hist", "paint", "--downstream"])
            try edit("root/hist/nodes/frame/params.yaml", "width: 4", "width: 8")
            try flowdir(["rerun", "root/hist", "frame"])
            // Card actions: a failed step, one blocked behind it, a question that may be skipped.
            try dir.write("wf/tools/Boom.yaml", """
                kind: Boom
                outputs: { image: { type: ImageRef, ext: png } }
                run:
                  command: [sh, -c, 'echo no paint left >&2; exit 3']
                """)
            try dir.write("wf/tools/Facts.yaml", """
                kind: Facts
                outputs: { data: { type: JSONRef, ext: json } }
                run:
                  command: [python3, -c, "import json, sys; open(sys.argv[1], 'w').write(json.dumps(dict(a=1, b=[1, 2]), separators=(',', ':')))", "{outputs.data}"]
                """)
            try dir.write("wf/cards.yaml", """
                schema: app.workflow/v2
                name: Card actions
                options: { errorPolicy: isolate-node }
                nodes:
                  - { id: facts, kind: Facts }
                  - { id: boom, kind: Boom }
                  - { id: after, kind: Frame }
                  - id: pick
                    kind: Choice
                    outputs: { choice: JSONRef }
                    await: { type: choice, choices: [a, b], allowSkip: true }
                edges: [boom.image -> after.image]
                """)
            try flowdir(["new", "wf/cards.yaml", "root/cards"])
            let failed = try CommandRunner.flowdir(["run", "root/cards"], in: dir.path, environment: env)
            #expect(failed.status != 0, "boom fails: \(failed.stdout)\(failed.stderr)")
            let log = dir.path + "/serve.log"
            let script = RepositoryPaths.root + "/Tests/FlowdirCommandsTests/Python/browser_history.py"
            let r = try CommandRunner.run(Self.venv + "/bin/python", [script, "--root", dir.path + "/root", "--flowdir", RepositoryPaths.flowdirExecutable,
                                                                     "--serve-log", log, "--artifacts", Self.screenshots],
                                          in: dir.path, environment: env)
            let served = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            #expect(r.status == 0, "\(r.stdout)\(r.stderr)\n--- flowdir serve:\n\(served.suffix(4000))")
            #expect(r.stdout.contains("0 failures"), "\(r.stdout)")
        }
    }

    /// Settings: this server, each endpoint and whether it answers, storage
    /// with Free up space (a preview, then freed) and pins, with no secret
    /// in any page or response (`Python/browser_settings.py`).
    @Test func settingsShowEndpointsAndFreeSpaceWithNoSecretShown() async throws {
        try await offPool {
            #expect(FileManager.default.isExecutableFile(atPath: "/usr/bin/chromium"), "no chromium: `bash scripts/setup.sh` installs it")
            let s = try RemoteJobSetup()
            let dir = s.dir
            // A second endpoint where nothing listens (port 1 of loopback).
            let config = try String(contentsOfFile: dir.path + "/config.yaml", encoding: .utf8)
            try dir.write("config.yaml", config + "  down: { url: http://127.0.0.1:1/v1 }\n")
            // noise: a large PNG each run (kept beside git); two runs, synced to a hub.
            try dir.write("wf/tools/Noise.yaml", """
                kind: Noise
                outputs: { image: ImageRef }
                run:
                  command: [convert, -size, 700x700, "xc:", +noise, Random, "png:{outputs.image}"]
                """)
            try dir.write("wf/noise.yaml", "schema: app.workflow/v2\nname: Pictures\nnodes:\n  - { id: noise, kind: Noise }\n")
            func flowdir(_ args: [String]) throws {
                let r = try s.flowdir(args)
                #expect(r.status == 0, "flowdir \(args.joined(separator: " ")): \(r.stdout)\(r.stderr)")
            }
            try flowdir(["new", "wf/noise.yaml", "root/pics"])
            let hub = dir.path + "/hub.git"
            _ = try CommandRunner.run("/usr/bin/git", ["init", "--quiet", "--bare", "--initial-branch=main", hub])
            _ = try GitCLI.run(["remote", "add", "origin", "file://" + hub], in: dir.path + "/root/pics")
            try flowdir(["run", "root/pics"])
            try flowdir(["rerun", "root/pics", "noise"])
            try flowdir(["sync", "root/pics"])
            let tokenFile = dir.path + "/serve-token"
            let log = dir.path + "/serve.log"
            let serve = try ServeCommandTests.ServeProcess([dir.path + "/root", "--token-file", tokenFile], in: dir.path, environment: s.env, log: log)
            let script = RepositoryPaths.root + "/Tests/FlowdirCommandsTests/Python/browser_settings.py"
            let r = try withExtendedLifetime(serve) {
                try CommandRunner.run(Self.venv + "/bin/python", [script, "--url", serve.url, "--root", dir.path + "/root", "--artifacts", Self.screenshots,
                                                                 "--token-file", tokenFile, "--secret", RemoteJobSetup.token,
                                                                 "--secret", RemoteJobSetup.webhookSecret, "--secret", serve.token],
                                      in: dir.path, environment: s.env)
            }
            let served = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            #expect(r.status == 0, "\(r.stdout)\(r.stderr)\n--- flowdir serve:\n\(served.suffix(4000))")
            #expect(r.stdout.contains("0 failures"), "\(r.stdout)")
        }
    }

    /// The seed workflow with a `confirm_params` await on its `run.http`
    /// stylize step, confirmed from the page with an edit: the job server
    /// gets the edited params, and the workflow finishes (`Python/browser_confirm.py`).
    @Test func aRemoteStepConfirmedFromThePageRunsWithTheEditedParams() async throws {
        try await offPool {
            let repo = RepositoryPaths.root
            let tools = try FileManager.default.contentsOfDirectory(atPath: repo + "/workflows/tools")
            // The job server serves the seed's model flowdir/stylize with the local tool (ImageMagick).
            let s = try RemoteJobSetup(nodes: "", models: ["flowdir/stylize=tools/StylizeLocal"]) { dir in
                for f in ["StylizeLocal.yaml", "stylize.py"] {
                    try FileManager.default.copyItem(atPath: repo + "/workflows/tools/" + f, toPath: dir.path + "/server/tools/" + f)
                }
            }
            let dir = s.dir
            for f in tools { try FileManager.default.copyItem(atPath: repo + "/workflows/tools/" + f, toPath: dir.path + "/wf/tools/" + f) }
            let seed = try String(contentsOfFile: repo + "/workflows/stylize-with-mask.jsonc", encoding: .utf8)
                .replacingOccurrences(of: "\"kind\": \"StylizeRemote\",", with: "\"kind\": \"StylizeRemote\",\n      \"await\": { \"type\": \"confirm_params\" },")
            #expect(seed.contains("confirm_params"))
            try dir.write("wf/seed.jsonc", seed)
            try FileManager.default.copyItem(atPath: repo + "/workflows/photo.png", toPath: dir.path + "/photo.png")
            _ = try CommandRunner.run("/usr/bin/convert", [dir.path + "/photo.png", "-colorspace", "Gray", "-threshold", "50%", dir.path + "/mask.png"])
            func flowdir(_ args: [String], _ expected: Int32 = 0) throws {
                let r = try s.flowdir(args)
                #expect(r.status == expected, "flowdir \(args.joined(separator: " ")): \(r.stdout)\(r.stderr)")
            }
            // The photo and the mask answered here; the page confirms the GPU job.
            try flowdir(["new", "wf/seed.jsonc", "root/seed"])
            try flowdir(["run", "root/seed"], 2)
            try flowdir(["answer", "root/seed/load1", dir.path + "/photo.png"])
            try flowdir(["run", "root/seed"], 2)
            try flowdir(["answer", "root/seed/mask1", dir.path + "/mask.png"])
            try flowdir(["run", "root/seed"], 2)
            #expect(s.state(dir.path + "/root/seed", "stylize1") == "awaitingUser")
            #expect(s.predictions().isEmpty, "nothing is sent before it is confirmed")
            let log = dir.path + "/serve.log"
            let serve = try ServeCommandTests.ServeProcess([dir.path + "/root"], in: dir.path, environment: s.env, log: log)
            let script = repo + "/Tests/FlowdirCommandsTests/Python/browser_confirm.py"
            let r = try withExtendedLifetime(serve) {
                try CommandRunner.run(Self.venv + "/bin/python", [script, "--url", serve.url, "--root", dir.path + "/root", "--artifacts", Self.screenshots],
                                      in: dir.path, environment: s.env)
            }
            let served = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            #expect(r.status == 0, "\(r.stdout)\(r.stderr)\n--- flowdir serve:\n\(served.suffix(4000))")
            #expect(r.stdout.contains("0 failures"), "\(r.stdout)")
            // One job, sent with the edited steps and the rest as offered.
            let predictions = s.predictions()
            #expect(predictions.count == 1, "\(predictions)")
            let input = predictions.first?["input"] as? [String: Any]
            #expect("\(input?["steps"] ?? "")" == "12" && input?["style"] as? String == "sketch", "\(input ?? [:])")
        }
    }
}
