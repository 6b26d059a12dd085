import FlowdirIO
import FlowdirJobServer
import Foundation
import FlowdirTestSupport
import Testing

/// A tool model is given only what it declares (docs/jobserver.md): each
/// file input checked by its content against its port's type (an SVG
/// posing as a PNG never reaches ImageMagick), each param against the
/// tool's schema; anything else is refused (422, saying why) before a
/// prediction is made.
@Suite(.tags(.medium)) struct ToolInputTests {
    static let thumb = """
        kind: Thumb
        inputs: { image: ImageRef }
        outputs: { out: TextRef }
        params:
          steps: { type: integer, default: 30, min: 1, max: 150 }
          style: { type: string, default: sketch, enum: [sketch, paint] }
          sharp: { type: boolean, default: false }
        run:
          command: [sh, -c, 'printf "%s %s %s %s" "$(basename "$0")" "$2" "$3" "$(wc -c < "$0")" > "$1"', "{inputs.image}", "{outputs.out}", "{params.steps}", "{params.sharp}"]
        """

    func create(_ h: Harness, _ input: JSONValue) async throws -> Harness.Answer {
        try await h.request(.POST, "/v1/models/tools/Thumb/predictions", json: ["input": input])
    }

    @Test func aFileWhoseContentIsNotItsPortsTypeIsRefusedBeforeAnythingRuns() async throws {
        let h = try await Harness(tools: ["Thumb": Self.thumb])
        let svg = JobServerSecurityTests.svg
        // Inline, claiming to be a PNG; and uploaded as a PNG, given by its URL.
        let inline = try await create(h, ["image": .string(JobAPIClient.dataURI(svg, contentType: "image/png"))])
        #expect(inline.status == 422, "\(inline.text)")
        #expect(inline.json["detail"]?.stringValue?.contains("input 'image' is not a valid") == true, "\(inline.text)")
        #expect(inline.json["detail"]?.stringValue?.contains("expected an image (PNG, JPEG or WebP), found text") == true, "\(inline.text)")
        let up = try await h.request(.POST, "/v1/files", body: svg, contentType: "image/png")
        let byURL = try await create(h, ["image": .string(try #require(up.json["urls"]?["get"]?.stringValue))])
        #expect(byURL.status == 422, "\(byURL.text)")
        // A URL elsewhere is not fetched.
        #expect(try await create(h, ["image": "http://10.0.0.5/x.png"]).status == 422)
        #expect(try await h.request(.GET, "/v1/_stats").json["created"]?.number == 0)

        // A real PNG runs, named for what it is.
        let ok = try await create(h, ["image": .string(JobAPIClient.dataURI(JobServerSecurityTests.png, contentType: "application/octet-stream"))])
        #expect(ok.status == 201, "\(ok.text)")
        let done = try await h.wait(try #require(ok.json["id"]?.stringValue))
        #expect(done["status"] == "succeeded", "\(done)")
        #expect(try await h.request(.GET, try #require(done["output"]?.stringValue)).text == "image.png 30 false \(JobServerSecurityTests.png.count)")
    }

    @Test func paramsAreCheckedAgainstTheToolsSchema() async throws {
        let h = try await Harness(tools: ["Thumb": Self.thumb])
        let image = JSONValue.string(JobAPIClient.dataURI(JobServerSecurityTests.png, contentType: "image/png"))
        let refused: [(JSONValue, String)] = [
            (["image": image, "steps": 500], "param 'steps' is 500, above the maximum 150"),
            (["image": image, "steps": 2.5], "param 'steps' must be an integer"),
            (["image": image, "style": "cubist"], "param 'style' is 'cubist', not one of: sketch, paint"),
            (["image": image, "sharp": "yes"], "param 'sharp' must be a boolean"),
            (["image": image, "bogus": 1], "Thumb has no input or param 'bogus'"),
        ]
        for (input, detail) in refused {
            let a = try await create(h, input)
            #expect(a.status == 422 && a.json["detail"]?.stringValue?.contains(detail) == true, "\(detail): \(a.text)")
        }
        #expect(try await h.request(.GET, "/v1/_stats").json["created"]?.number == 0)
        // Numbers and booleans may come as their text, as a template's "{params.x}" can send them.
        let ok = try await create(h, ["image": image, "steps": "20", "sharp": "true", "style": "paint"])
        #expect(ok.status == 201, "\(ok.text)")
        let done = try await h.wait(try #require(ok.json["id"]?.stringValue))
        #expect(try await h.request(.GET, try #require(done["output"]?.stringValue)).text.hasPrefix("image.png 20 true "))
    }
}
