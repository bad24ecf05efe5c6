//! Predict, then see.
//!
//! Whatever answers a question stays out of the page until the student commits a
//! prediction or asks to see the answer. Both go into the link (`predict=17`,
//! `reveal=1`), so a shared link opens at the same moment: before the answer, or after
//! it with the same guess. A new question (a new cut, another Part) asks again.
//!
//! [`Predict`] draws the question, the guess field and the two buttons; once answered it
//! draws the verdict and its children, the answer. [`answer_pending`] stands where an
//! answer will appear when the question that unlocks it is asked elsewhere on the page.

use yew::prelude::*;

use crate::state::LabAction;
use crate::url_state::{LabParams, PREDICT_MAX};

#[derive(Properties, PartialEq)]
pub struct PredictProps {
    /// The question, ending with a question mark.
    pub question: AttrValue,
    /// The run's answer, to tell the student whether the guess was right.
    pub answer: Option<u32>,
    pub params: LabParams,
    pub on_action: Callback<LabAction>,
    /// The answer: rendered only once the student has predicted or asked to see it.
    #[prop_or_default]
    pub children: Html,
}

#[component]
pub fn Predict(props: &PredictProps) -> Html {
    let typed = use_state(String::new);
    let problem = use_state(|| None::<String>);
    if props.params.answer_shown() {
        let verdict = props.params.predict.map(|guess| match props.answer {
            Some(answer) if answer == guess => format!("You predicted {guess}: right."),
            Some(answer) => format!("You predicted {guess}; the run says {answer}."),
            None => format!("You predicted {guess}."),
        });
        return html! {
            <>
            if let Some(verdict) = verdict { <p class="verdict" data-predicted={props.params.predict.map(|guess| guess.to_string())}>{ verdict }</p> }
            { props.children.clone() }
            </>
        };
    }
    let on_input = {
        let typed = typed.clone();
        Callback::from(move |event: InputEvent| {
            let input: web_sys::HtmlInputElement = event.target_unchecked_into();
            typed.set(input.value());
        })
    };
    let commit = {
        let typed = typed.clone();
        let problem = problem.clone();
        let on_action = props.on_action.clone();
        move || match typed.trim().parse::<u32>() {
            Ok(guess) if guess <= PREDICT_MAX => {
                problem.set(None);
                on_action.emit(LabAction::Predict(guess));
            }
            _ => {
                problem.set(Some(format!("{}: give a whole number from 0 to {PREDICT_MAX}", typed.trim())));
                typed.set(String::new());
            }
        }
    };
    let on_commit = {
        let commit = commit.clone();
        Callback::from(move |_: MouseEvent| commit())
    };
    let on_key = Callback::from(move |event: KeyboardEvent| {
        if event.key() == "Enter" {
            commit();
        }
    });
    let on_reveal = props.on_action.reform(|_: MouseEvent| LabAction::Reveal);
    html! {
        <div class="predict" data-answer-hidden="true">
            <label>{ format!("Predict: {} ", props.question) }
                <input class="guess" type="number" min="0" max={PREDICT_MAX.to_string()} inputmode="numeric" value={(*typed).clone()}
                    oninput={on_input} onkeydown={on_key} aria-invalid={problem.is_some().then_some("true")} /></label>
            <button class="commit-guess primary" onclick={on_commit}>{ "commit my prediction" }</button>
            <button class="reveal" onclick={on_reveal}>{ "just show me" }</button>
            if let Some(problem) = (*problem).clone() { <span class="field-problem" role="alert">{ problem }</span> }
        </div>
    }
}

/// A placeholder where an answer will appear once its question is answered: `what`
/// says what will appear, and where its question is ("the table of modes", "below").
pub fn answer_pending(what: &'static str) -> Html {
    html! { <p class="answer-pending" data-answer-hidden="true">{ what }</p> }
}
