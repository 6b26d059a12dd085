import FlowdirIO
import FlowdirJobServer
import FlowdirTestSupport
import Foundation
import Testing

/// Replicate's routes as flowdir uses them, over real HTTP.
@Suite(.tags(.medium)) struct RoutesTests {
    @Test func aPredictionByModelIsMadeRunAndAnsweredInReplicatesShape() async throws {
        let h = try await Harness()
        let p = try await h.create("tools/Work", ["text": "hello", "sleep": 0])
        let id = try #require(p["id"]?.stringValue)
        #expect(id.count == 26)
        #expect(p["model"] == "tools/Work")
        #expect(p["status"]?.stringValue.map { ["starting", "processing"].contains($0) } == true)
        #expect(p["input"] == ["text": "hello", "sleep": 0])
        #expect(p["urls"]?["get"]?.stringValue == "\(h.base)/v1/predictions/\(id)")
        #expect(p["urls"]?["cancel"]?.stringValue == "\(h.base)/v1/predictions/\(id)/cancel")
        for key in ["version", "output", "logs", "error", "created_at", "started_at", "completed_at", "metrics", "webhook"] {
            #expect(p[key] != nil, "no \(key)")
        }
        let done = try await h.wait(id)
        #expect(done["status"] == "succeeded")
        #expect(done["logs"]?.stringValue?.contains("working on hello") == true)
        #expect(done["metrics"]?["predict_time"]?.number != nil)
        #expect(done["completed_at"]?.stringValue?.hasSuffix("Z") == true)
        // The output is a URL it serves, to the token's holder only.
        let url = try #require(done["output"]?.stringValue)
        #expect(url.hasPrefix(h.base + "/v1/files/"))
        let file = try await h.request(.GET, url)
        #expect(file.status == 200 && file.text == "hello")
        #expect(file.headers["Content-Type"].first == "text/plain; charset=utf-8")
        #expect(try await h.request(.GET, url, token: nil).status == 401)
    }

    @Test func aPredictionByVersionNamesItsModelsVersion() async throws {
        let h = try await Harness()
        let model = try await h.request(.GET, "/v1/models/tools/Work").json
        let version = try #require(model["latest_version"]?["id"]?.stringValue)
        for v in [version, "tools/Work:" + version, "tools/Work"] {
            let a = try await h.request(.POST, "/v1/predictions", json: ["version": .string(v), "input": ["text": "v"]])
            #expect(a.status == 201, "\(a.text)")
            #expect(a.json["model"] == "tools/Work" && a.json["version"]?.stringValue == version)
        }
        let unknown = try await h.request(.POST, "/v1/predictions", json: ["version": "0123abcd", "input": [:]])
        #expect(unknown.status == 404 && unknown.json["detail"]?.stringValue?.contains("0123abcd") == true)
    }

    @Test func wrongRequestsGetReplicatesErrorsWithADetail() async throws {
        let h = try await Harness()
        let cases: [(Harness.Answer, Int, String)] = [
            (try await h.request(.GET, "/v1/predictions/nosuchone"), 404, "Not found"),
            (try await h.request(.POST, "/v1/models/acme/nothing/predictions", json: ["input": [:]]), 404, "tools/Work"),
            (try await h.request(.POST, "/v1/models/tools/Work/predictions", json: ["inputs": [:]]), 422, "`input` is required"),
            (try await h.request(.POST, "/v1/models/tools/Work/predictions", json: ["input": [:], "webhook": "ftp://x"]), 422, "webhook"),
            (try await h.request(.POST, "/v1/models/tools/Work/predictions", body: Array("{nope".utf8), contentType: "application/json"), 400, "not JSON"),
            (try await h.request(.POST, "/v1/models/tools/Work/predictions", body: Array("{}".utf8), contentType: "text/plain"), 415, "application/json"),
            (try await h.request(.GET, "/v1/nowhere"), 404, "Not Found"),
            (try await h.request(.GET, "/v1/predictions?cursor=zzz"), 400, "cursor"),
        ]
        for (answer, status, detail) in cases {
            #expect(answer.status == status, "\(answer.text)")
            #expect(answer.json["status"]?.number == Double(status))
            #expect(answer.json["detail"]?.stringValue?.contains(detail) == true, "\(answer.text)")
        }
        // Still serving.
        #expect(try await h.request(.GET, "/v1/predictions").status == 200)
    }

    @Test func theTokenIsRequiredAndNeverWritten() async throws {
        let h = try await Harness()
        let none = try await h.request(.GET, "/v1/predictions", token: nil)
        #expect(none.status == 401 && none.json["title"] == "Unauthenticated")
        let wrong = try await h.request(.POST, "/v1/models/tools/Work/predictions", json: ["input": [:]], token: "guess")
        #expect(wrong.status == 401 && wrong.json["detail"] == "You did not pass a valid authentication token")
        #expect(try await h.request(.GET, "/v1/_stats", token: nil).status == 401)
        #expect(try await h.request(.GET, "/v1/_stats").json["created"]?.number == 0)
        #expect(try await h.request(.GET, "/v1/predictions").status == 200)
        let written = try FileManager.default.subpathsOfDirectory(atPath: h.data).map { path -> String in
            (try? String(contentsOfFile: h.data + "/" + path, encoding: .utf8)) ?? ""
        }.joined()
        #expect(!written.contains(Harness.token))
        #expect(h.accessLog.contains { $0.hasSuffix(" GET /v1/predictions 401") })
    }

    @Test func theListIsNewestFirstInStablePages() async throws {
        let h = try await Harness { $0.pageSize = 3 }
        var ids: [String] = []
        for i in 0..<7 { ids.append(try #require(try await h.create("tools/Work", ["text": .string("p\(i)")])["id"]?.stringValue)) }
        var seen: [String] = []
        var next: String? = "/v1/predictions"
        var pages = 0
        while let url = next {
            let page = try await h.request(.GET, url).json
            seen += page["results"]?.array.compactMap { $0["id"]?.stringValue } ?? []
            next = page["next"]?.stringValue
            pages += 1
            // Made while paging: neither repeated nor skipped in the pages after.
            if pages == 1 { _ = try await h.create("tools/Work", ["text": "late"]) }
        }
        #expect(pages == 3)
        #expect(seen == Array(ids.reversed()))
        // `previous` of a page leads to the one newer than it.
        let second = try await h.request(.GET, "/v1/predictions?cursor=b5").json
        #expect(second["results"]?.array.compactMap { $0["id"]?.stringValue } == [ids[3], ids[2], ids[1]])
        let back = try await h.request(.GET, try #require(second["previous"]?.stringValue)).json
        #expect(back["results"]?.array.compactMap { $0["id"]?.stringValue } == [ids[6], ids[5], ids[4]])
        #expect(try await h.request(.GET, "/v1/_stats").json["created"]?.number == 8)
    }

    @Test func filesAreUploadedAsReplicatesFilesAPIAndUsedAsInputs() async throws {
        let h = try await Harness()
        let boundary = "b0undary"
        var body = Array("--\(boundary)\r\nContent-Disposition: form-data; name=\"metadata\"\r\n\r\n{}\r\n".utf8)
        body += Array("--\(boundary)\r\nContent-Disposition: form-data; name=\"content\"; filename=\"words.txt\"\r\nContent-Type: text/plain\r\n\r\n".utf8)
        body += Array("some words".utf8) + Array("\r\n--\(boundary)--\r\n".utf8)
        let up = try await h.request(.POST, "/v1/files", body: body, contentType: "multipart/form-data; boundary=\(boundary)")
        #expect(up.status == 201, "\(up.text)")
        #expect(up.json["name"] == "words.txt" && up.json["content_type"] == "text/plain" && up.json["size"]?.number == 10)
        let get = try #require(up.json["urls"]?["get"]?.stringValue)
        #expect(try await h.request(.GET, get).text == "some words")
        #expect(try await h.request(.GET, try #require(up.json["urls"]?["download"]?.stringValue)).text == "some words")
        // A raw body is a file too.
        let raw = try await h.request(.POST, "/v1/files", body: Array("raw bytes".utf8), contentType: "text/plain")
        #expect(raw.status == 201 && raw.json["size"]?.number == 9)
        #expect(try await h.request(.GET, "/v1/files").json["results"]?.array.count == 2)

        // The uploaded file's URL as an input, and a data: URI as another.
        let p = try await h.create("tools/Pair", ["src": .string(get)])
        let done = try await h.wait(try #require(p["id"]?.stringValue))
        #expect(done["status"] == "succeeded", "\(done)")
        let upper = try #require(done["output"]?["upper"]?.stringValue)
        #expect(try await h.request(.GET, upper).text == "SOME WORDS")
        #expect(try await h.request(.GET, try #require(done["output"]?["size"]?.stringValue)).text == "10")
        let q = try await h.create("tools/Pair", ["src": .string(JobAPIClient.dataURI(Array("abc".utf8), contentType: "text/plain"))])
        let second = try await h.wait(try #require(q["id"]?.stringValue))
        #expect(try await h.request(.GET, try #require(second["output"]?["upper"]?.stringValue)).text == "ABC")

        #expect(try await h.request(.DELETE, get).status == 204)
        #expect(try await h.request(.GET, get).status == 404)
    }

    @Test func filesAreServedForALimitedTime() async throws {
        // Its lifetime passes when the test moves the clock, however loaded the machine.
        let clock = ManualClock()
        let h = try await Harness {
            $0.fileLifetime = 5
            $0.clock = clock.flowdirClock
        }
        let up = try await h.request(.POST, "/v1/files", body: Array("short-lived".utf8), contentType: "text/plain")
        let url = try #require(up.json["urls"]?["download"]?.stringValue)
        clock.advance(by: .milliseconds(4900))
        #expect(try await h.request(.GET, url).status == 200)
        clock.advance(by: .milliseconds(200))
        let gone = try await h.request(.GET, url)
        #expect(gone.status == 404 && gone.json["detail"]?.stringValue?.contains("expired") == true)
    }
}
