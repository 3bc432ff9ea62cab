"""The page in a real browser: headless Chromium opens a kernel page, a click on a loop highlights exactly its
C lines and names the primitive that made it; a screenshot is saved. Skipped, with the reason, where
Chromium, ChromeDriver or selenium is missing (CI installs them: see .ci/run)."""
import numpy as np
import pytest

import tesched as ts
from tesched.tools.browser import file_url, missing, open_browser
from tests.viz.helpers import ROWS, N, stencil
from tests.viz.page_parser import Page

REASON = missing()
pytestmark = pytest.mark.skipif(REASON is not None, reason=f"no headless browser: {REASON}")


def test_click_on_a_loop_highlights_its_c_lines(tmp_path):
    from selenium.webdriver.common.by import By

    s, args, reference = stencil()
    f = ts.build(s, args, name="blur")
    a = np.random.default_rng(0).random((N, N), dtype=np.float32)
    np.testing.assert_allclose(f(a), reference(a), rtol=1e-6)
    path = f.to_html(tmp_path / "blur.html")
    expected = {loop["data-name"]: Page(path).lines_of(loop) for loop in Page(path).loops}
    with open_browser() as browser:
        browser.get(file_url(path))
        assert browser.execute_script("return document.documentElement.dataset.ready") == "1"
        loop = next(el for el in browser.find_elements(By.CSS_SELECTOR, ".loop")
                    if el.get_attribute("data-name") == "i.outer")
        assert not browser.find_elements(By.CSS_SELECTOR, ".cl.hl")
        loop.click()
        lit = [el.get_attribute("textContent") for el in browser.find_elements(By.CSS_SELECTOR, ".cl.hl")]
        assert lit == expected["i.outer"] and any("for (int64_t i_outer" in line for line in lit)
        assert "sel" in loop.get_attribute("class")
        info = browser.find_element(By.CSS_SELECTOR, ".loopinfo").text
        assert f"split(i, factor={ROWS})" in info and "stage C" in info
        inner = next(el for el in browser.find_elements(By.CSS_SELECTOR, ".loop")
                     if el.get_attribute("data-name") == "i.inner")
        inner.click()
        lit = [el.get_attribute("textContent") for el in browser.find_elements(By.CSS_SELECTOR, ".cl.hl")]
        assert lit == expected["i.inner"] and len(lit) < len(expected["i.outer"])
        shot = tmp_path / "blur.png"
        assert browser.save_screenshot(str(shot))
        assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_script_named_stage_does_not_run_in_the_browser(tmp_path):
    s, args, _ = stencil(producer_name="<img src=x onerror=\"document.title='pwned'\"><script>document.title='pwned'</script>")
    path = ts.lower(s, args, name="blur").to_html(tmp_path / "evil.html")
    with open_browser() as browser:
        browser.get(file_url(path))
        assert browser.execute_script("return document.documentElement.dataset.ready") == "1"
        assert browser.title == "blur"
