// Entry: load the app (which instantiates the component on import) and say plainly when that
// cannot happen, e.g. outside a secure context, where WebCrypto cannot verify the component.
import './style.css';

import('./app.js').catch((error) => {
  const box = document.getElementById('boot-error');
  box.hidden = false;
  box.textContent = `The evaluator could not start: ${error.message}. Serve this page over https or from localhost.`;
  document.body.dataset.ready = 'error';
  console.error(error);
});
