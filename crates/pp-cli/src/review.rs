//! The person's decision at the terminal: one card, or a changeset (the calls of one
//! model turn) reviewed as one, each call with its own a/r/e and `A` to approve them all
//! once every one has been shown.
//!
//! Every decision carries the precheck fingerprint of the card the person saw
//! (`seen_fingerprint`), so a target that changed meanwhile is shown again, not decided
//! blind. An edited call (`e`) is shown with its own change and asked about again before
//! anything runs.

use pp_tasks::{
    Action, ApprovalView, ChangesetDecision, Decision, DecisionStatus, PrecheckStatus,
    ResolveRequest, TaskService,
};
use pp_types::{ApprovalId, ApprovalState, TaskRecord};
use serde_json::Value;

use crate::acting;
use crate::commands::run::{Answer, OnInterrupt, Position, Ui, ask_blocking, print_hints};
use crate::exit;
use crate::output::errln;
use crate::render::one_line;
use crate::report::Interrupted;
use crate::style::{Paint, Palette, terminal_columns};

/// How a review ended.
pub(crate) enum Reviewed {
    /// Decided (or cancelled): follow the task as it is now.
    Task(Box<TaskRecord>),
    /// Stop with this exit code (the approvals stay as they are).
    Exit(u8),
}

/// One call the person reviews: the card as the request made it, the card on screen
/// (the edited call's once edited), and the decision taken so far.
struct Call {
    view: ApprovalView,
    shown: ApprovalView,
    edited: Option<Value>,
    decision: Option<ResolveRequest>,
    seen: bool,
}

impl Call {
    fn new(view: ApprovalView) -> Self {
        Self {
            shown: view.clone(),
            view,
            edited: None,
            decision: None,
            seen: false,
        }
    }

    /// The decision with what the person saw: the edited arguments (approve only) and
    /// the fingerprint of the card on screen.
    fn request(&self, mut request: ResolveRequest) -> ResolveRequest {
        if request.decision == Decision::Approve {
            request.edited_arguments = self.edited.clone();
        }
        request.seen_fingerprint = fingerprint(&self.shown);
        request
    }

    /// `e`: the edited call's card (its change against the target as it is now) takes
    /// the place of the card on screen; `false`, saying why, when the edit is refused.
    async fn edit(&mut self, service: &TaskService, arguments: Value) -> bool {
        match edited_card(service, &self.view, &arguments).await {
            Ok(card) => {
                self.shown = card;
                self.edited = Some(arguments);
                true
            }
            Err(message) => {
                errln!("the edited call was refused: {message}; choose again");
                false
            }
        }
    }

    /// After a refusal for a changed target: the card as it is now (the edited call's,
    /// when edited).
    async fn refresh(&mut self, service: &TaskService) -> anyhow::Result<()> {
        self.view = service
            .approval_view_checked(&ApprovalId(self.view.id.clone()))
            .await?;
        self.shown = match &self.edited {
            Some(arguments) => edited_card(service, &self.view, arguments)
                .await
                .unwrap_or_else(|_| self.view.clone()),
            None => self.view.clone(),
        };
        Ok(())
    }
}

/// The fingerprint of the target as `card` showed it.
fn fingerprint(card: &ApprovalView) -> Option<String> {
    card.precheck.as_ref()?.fingerprint.clone()
}

/// The card of `view`'s call with `arguments` instead: its change as the precheck sees
/// it now; `Err` with why when the tool's schema or the gate refuses the arguments.
async fn edited_card(
    service: &TaskService,
    view: &ApprovalView,
    arguments: &Value,
) -> Result<ApprovalView, String> {
    let id = ApprovalId(view.id.clone());
    let precheck = match service.precheck(&id, Some(arguments)).await {
        Ok(precheck) => precheck,
        Err(pp_tasks::Error::InvalidArguments(message)) => return Err(message),
        Err(error) => return Err(error.to_string()),
    };
    let mut card = view.clone();
    card.arguments = arguments.clone();
    if let Some(path) = arguments.get("path").and_then(Value::as_str) {
        card.target = Some(path.to_owned());
        card.resolved = None;
    }
    card.diff = precheck.as_ref().and_then(|p| p.diff.clone());
    card.content = precheck.as_ref().and_then(|p| p.content.clone());
    card.label = precheck.as_ref().and_then(|p| p.label).or(card.label);
    card.scope = precheck.as_ref().and_then(|p| p.scope);
    card.added = precheck.as_ref().and_then(|p| p.added);
    card.removed = precheck.as_ref().and_then(|p| p.removed);
    card.notice = Some(
        "your edit, not decided yet: the change shown is what the edited call would do".to_owned(),
    );
    card.precheck = precheck;
    Ok(card)
}

/// Says "call i of n" above a changeset's card (`ask` shows the card itself, page by
/// page, with what `a` does).
fn print_card(palette: Palette, position: Option<Position>) {
    if let Some(position) = position {
        errln!(
            "{}",
            palette.paint(
                Paint::Bold,
                &format!(
                    "call {} of {} in this turn",
                    position.index + 1,
                    position.size
                )
            )
        );
    }
}

/// What `a` does when it would not simply apply the call as shown.
pub(crate) fn approve_hint(card: &ApprovalView) -> Option<String> {
    let precheck = card.precheck.as_ref()?;
    let why = precheck
        .message
        .as_deref()
        .map(one_line)
        .unwrap_or_default();
    Some(match precheck.status {
        PrecheckStatus::Changed => {
            "a approves against the file as it is now (the change shown above)".to_owned()
        }
        PrecheckStatus::WillFail => {
            format!("a runs a call that will fail ({why}); r tells the model")
        }
        PrecheckStatus::NoChange => format!("a changes nothing on disk ({why})"),
        PrecheckStatus::Ready | PrecheckStatus::Unavailable => return None,
    })
}

/// Ctrl+C at a card: `run` stops with the approvals pending; `chat` cancels this turn.
async fn interrupted(
    service: &TaskService,
    record: &TaskRecord,
    ui: &Ui,
    first: &str,
    count: usize,
) -> anyhow::Result<Reviewed> {
    if ui.interrupt == OnInterrupt::CancelTask {
        errln!("\ninterrupted: nothing was run; cancelling this turn.");
        acting::authorize(service, &ui.caller, Action::Cancel(record)).await?;
        return match service.cancel_as(&record.id, &ui.caller).await {
            Ok(cancelled) => Ok(Reviewed::Task(Box::new(cancelled))),
            // Resolved elsewhere first: follow the task as it is now.
            Err(pp_tasks::Error::InvalidState { .. }) => {
                Ok(Reviewed::Task(Box::new(service.task(&record.id).await?)))
            }
            Err(error) => Err(error.into()),
        };
    }
    if count > 1 {
        errln!("\ninterrupted: nothing was decided or run; the {count} approvals stay pending.");
    } else {
        errln!("\ninterrupted: nothing was run and the approval stays pending.");
    }
    print_hints(first);
    if let Some(feed) = &ui.feed {
        let at_card = Some(Interrupted::ApprovalPending);
        feed.finish(record, Some(first), at_card).await?;
    }
    Ok(Reviewed::Exit(exit::INTERRUPTED))
}

/// Asks about the one card `view` until it is decided.
pub(crate) async fn decide_one(
    service: &TaskService,
    record: &TaskRecord,
    view: ApprovalView,
    ui: &Ui,
) -> anyhow::Result<Reviewed> {
    let palette = Palette::stderr();
    let mut call = Call::new(view);
    loop {
        let request = match ask_blocking(&call.shown, palette, None).await? {
            Answer::Decided(request) => call.request(request),
            // The edited call's card is shown by the next `ask`.
            Answer::Edited(arguments) => {
                call.edit(service, arguments).await;
                continue;
            }
            Answer::Next { .. } | Answer::ApproveAll => continue,
            Answer::Interrupted => {
                return interrupted(service, record, ui, &call.view.id, 1).await;
            }
        };
        // The grant as it is now, after the person's answer.
        acting::authorize(service, &ui.caller, Action::Resolve(record)).await?;
        let id = ApprovalId(call.view.id.clone());
        let resolve = service.resolve_for(&id, request, &ui.caller);
        match ui
            .stop
            .guarded(service, &record.id, ui.feed.as_ref(), resolve)
            .await
        {
            Ok(record) => return Ok(Reviewed::Task(Box::new(record))),
            // The target changed while the card was on screen: nothing ran; show the
            // card as it is now and ask again.
            Err(pp_tasks::Error::ChangedSinceSeen(message)) => {
                errln!("{message}");
                call.refresh(service).await?;
            }
            Err(pp_tasks::Error::InvalidArguments(message)) => {
                errln!("the edited call was refused: {message}");
            }
            Err(error @ pp_tasks::Error::AlreadyResolved { .. }) => {
                errln!("{error}: someone else decided first");
                return Ok(Reviewed::Exit(exit::CONFLICT));
            }
            Err(error) => return Err(error.into()),
        }
    }
}

/// The pending cards of changeset `id`, in the model's order.
pub(crate) async fn pending_cards(
    service: &TaskService,
    id: &str,
) -> anyhow::Result<Vec<ApprovalView>> {
    let set = service.changeset_view(id).await?;
    Ok(set
        .approvals
        .into_iter()
        .filter(|view| view.state == ApprovalState::Pending)
        .collect())
}

/// Reviews the pending calls of changeset `id` as one: each card in turn (a/r/e decide
/// it, `n` leaves it for later), `A` approves every call not decided yet once all have
/// been shown; then every decision is sent together.
pub(crate) async fn decide_changeset(
    service: &TaskService,
    record: &TaskRecord,
    id: &str,
    cards: Vec<ApprovalView>,
    ui: &Ui,
) -> anyhow::Result<Reviewed> {
    let palette = Palette::stderr();
    let size = cards.len();
    let first = cards
        .first()
        .map(|card| card.id.clone())
        .unwrap_or_default();
    let mut calls: Vec<Call> = cards.into_iter().map(Call::new).collect();
    let intro = format!(
        "The model asks for {size} calls in one turn (changeset {}): decide each with a/r/e, \
         n leaves one for later, A approves all once each has been shown.",
        one_line(id)
    );
    for line in crate::style::wrap(&intro, terminal_columns(), "", 4, true).0 {
        errln!("{}", palette.paint(Paint::Bold, &line));
    }
    let mut from = 0;
    while let Some(index) = (0..size)
        .map(|step| (from + step) % size)
        .find(|&index| calls[index].decision.is_none())
    {
        // `A` is live once every other call has been shown whole, and this one too
        // (`ask` checks that).
        let all_shown = calls
            .iter()
            .enumerate()
            .all(|(other, call)| other == index || call.seen);
        let position = Position {
            index,
            size,
            all_shown,
        };
        print_card(palette, Some(position));
        match ask_blocking(&calls[index].shown, palette, Some(position)).await? {
            Answer::Decided(request) => {
                let call = &mut calls[index];
                call.seen = true;
                call.decision = Some(call.request(request));
                from = index + 1;
            }
            Answer::Edited(arguments) => {
                // Shown again at the loop's top, edited: decided there. An edited call
                // is a new card: `A` waits until it too has been shown whole.
                let edited = calls[index].edit(service, arguments).await;
                calls[index].seen = !edited;
                from = index;
            }
            Answer::Next { shown } => {
                calls[index].seen |= shown;
                from = index + 1;
            }
            Answer::ApproveAll => {
                for call in calls.iter_mut().filter(|call| call.decision.is_none()) {
                    call.decision = Some(call.request(approve()));
                }
            }
            Answer::Interrupted => return interrupted(service, record, ui, &first, size).await,
        }
    }
    // The grant as it is now, after the person's answers.
    acting::authorize(service, &ui.caller, Action::Resolve(record)).await?;
    let decisions: Vec<ChangesetDecision> = calls
        .iter()
        .filter_map(|call| {
            let request = call.decision.clone()?;
            Some(ChangesetDecision {
                approval_id: ApprovalId(call.view.id.clone()),
                decision: request.decision,
                edited_arguments: request.edited_arguments,
                reason: request.reason,
                seen_fingerprint: request.seen_fingerprint,
            })
        })
        .collect();
    let resolve = service.resolve_changeset(
        id,
        decisions,
        pp_types::Actor::Operator,
        Some(pp_types::Via::Cli),
        Some(&ui.caller),
        true,
    );
    let results = ui
        .stop
        .guarded(service, &record.id, ui.feed.as_ref(), resolve)
        .await?;
    for (number, result) in results.iter().enumerate() {
        if result.status == DecisionStatus::Accepted {
            continue;
        }
        let why = result.message.as_deref().map(one_line).unwrap_or_default();
        let what = match result.status {
            DecisionStatus::ChangedSinceSeen => "not decided, its target changed; shown again",
            DecisionStatus::InvalidArguments => "not decided, the edited call was refused",
            DecisionStatus::AlreadyResolved => "someone else decided it first",
            DecisionStatus::InvalidState => "the task is not waiting any more",
            DecisionStatus::Accepted => "decided",
        };
        errln!("call {} of {size}: {what}: {why}", number + 1);
    }
    Ok(Reviewed::Task(Box::new(service.task(&record.id).await?)))
}

/// An approval as `A` gives it.
fn approve() -> ResolveRequest {
    ResolveRequest {
        decision: Decision::Approve,
        edited_arguments: None,
        reason: None,
        seen_fingerprint: None,
        actor: pp_types::Actor::Operator,
        wait: true,
        via: Some(pp_types::Via::Cli),
        remote_user: None,
    }
}
