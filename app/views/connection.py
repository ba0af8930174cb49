"""What a page shows when its server connection is lost: a banner that says so and a Reconnect button.

A Bokeh session lives in one server process; when that process ends (restarted by the deploy recipe's
supervisor, or the server stopped) the page's websocket closes and the page would otherwise freeze as it
was, its Pause button still showing. Bokeh's own "reconnect" (and Panel's `config.reconnect`, whose prompt
comes with Panel's notifications) reconnects the websocket to the same session id, which a restarted
process does not have. Reconnect here loads the page's current address again: the page keeps its address
in step with its configuration (views/page.py), so a new session on a live process opens the same lab.
Panel's `config.disconnect_notification` (panel/io/notifications.py) puts a toast on the page through its
notifications extension, a model more on every page (the app runs with notifications=False), with the same
session-id reconnect as its only offer; this callback on Bokeh's `connection_lost` document event is all
the page needs.

A restarted process's students all press Reconnect within seconds, and each reconnect builds a page. The button sets
a short-lived `labreconnect` cookie for its request, by which the deploy recipe's nginx queues reconnects and lets
them through at a steady rate per process (deploy/nginx.conf.template), and by which each process builds their pages
one at a time, a new visitor's first (deploy/lab_process.py), so that a new visitor's page is not held behind a whole
class's (issue 28). While its request waits, the banner stays, saying it is reconnecting.
"""
from bokeh.models import CustomJS

from ..model.i18n import LANGS, N_, tr

MESSAGE = N_("The connection to the server was lost: this page no longer updates.")
RECONNECT = N_("Reconnect")
RECONNECTING = N_("Reconnecting…")
# long enough for the request to leave (the browser sends it at once), short enough not to mark a later visit
RECONNECT_COOKIE = "labreconnect=1; Path=/; Max-Age=30; SameSite=Lax"
# the banner is drawn in the browser, after the server has gone: in the language <html lang> says (page.py keeps
# it in step with the language switch)
WORDS = {lang: {"message": tr(MESSAGE, lang), "reconnect": tr(RECONNECT, lang),
                 "reconnecting": tr(RECONNECTING, lang)} for lang in LANGS}

# idempotent: Bokeh may report the loss more than once (one per reconnection attempt)
SHOW_BANNER = """
if (document.getElementById('lab-connection-lost') !== null) { return }
const banner = document.createElement('div')
banner.id = 'lab-connection-lost'
banner.setAttribute('role', 'alert')
banner.style.cssText = 'position:fixed;top:0;left:0;right:0;z-index:100000;padding:10px 16px;' +
  'background:#b00020;color:#fff;font:15px/1.4 system-ui,sans-serif;display:flex;gap:12px;align-items:center;' +
  'justify-content:center;box-shadow:0 2px 6px rgba(0,0,0,.3)'
const say = words[document.documentElement.lang] || words['en']
const text = document.createElement('span')
text.textContent = say.message
const button = document.createElement('button')
button.type = 'button'
button.textContent = say.reconnect
button.style.cssText = 'font:inherit;font-weight:600;padding:4px 14px;border:0;border-radius:4px;cursor:pointer'
button.addEventListener('click', () => {
  // once: a second press would send the request again, to the back of the queue
  button.disabled = true
  button.textContent = say.reconnecting
  document.cookie = cookie
  window.location.assign(window.location.href)
})
banner.append(text, button)
document.body.append(banner)
"""


def watch_connection(doc):
    """Show the banner on this session's page when its connection to the server is lost."""
    doc.js_on_event("connection_lost", CustomJS(args={"words": WORDS, "cookie": RECONNECT_COOKIE}, code=SHOW_BANNER))
