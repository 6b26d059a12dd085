extension UIAssets {
    static let indexHTML = ##"""
<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1, viewport-fit=cover">
<meta name="color-scheme" content="light dark">
<title>flowdir</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="app.css">
</head>
<body>
<a class="skip-link" href="#main" data-action="skip-to-main">Skip to content</a>
<header class="app-header">
  <a class="brand" href="#/" aria-label="flowdir: Workflows">flowdir</a>
  <nav aria-label="Main">
    <ul class="tabs">
      <li><a href="#/" class="tab" data-tab="workflows" data-testid="nav-workflows">Workflows</a></li>
      <li><a href="#/inbox" class="tab" data-tab="inbox" data-testid="nav-inbox">Action Center <span class="count-badge" data-testid="nav-inbox-count" hidden></span></a></li>
    </ul>
  </nav>
  <span class="live-dot" data-testid="live-status" role="status" aria-live="polite">Connecting…</span>
</header>
<div class="toasts">
  <div class="toast toast-error" id="alert-box"><button type="button" class="close" data-action="dismiss-alert" data-testid="alert-dismiss" aria-label="Dismiss the error">✕</button><div id="alert" role="alert" data-testid="alert"></div></div>
  <div id="status" class="toast toast-ok" role="status" aria-live="polite" data-testid="status"></div>
</div>
<main id="main" tabindex="-1" data-testid="main">
  <p class="loading">Loading…</p>
</main>
<dialog id="editor" class="editor-dialog" data-testid="editor" aria-labelledby="editor-title"></dialog>
<dialog id="viewer" class="viewer-dialog" data-testid="viewer" aria-label="File viewer"></dialog>
<dialog id="new-dialog" class="new-dialog" data-testid="new-dialog" aria-labelledby="new-title"></dialog>
<dialog id="confirm" class="confirm-dialog" data-testid="confirm" aria-labelledby="confirm-text"></dialog>
<script src="mask.js"></script>
<script src="params.js"></script>
<script src="editors.js"></script>
<script src="app.js"></script>
</body>
</html>
"""##
}
